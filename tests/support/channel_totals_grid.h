// SPDX-License-Identifier: MIT
// The launch sequence of kernels/cuda/channel_totals.cuh run on the host over whole grids (the
// leaves, order and combine bodies; the atomic leaves into zeroed totals; the exact leaves
// merged into zeroed accumulators, then rounded), for the host-grid tests of the kernels built
// on it (bias.grad, batch-norm). The leaves run as the launcher runs them: the staged block
// program for long rows (with real barriers), else a thread per row; the tree and kahan combines
// as the combine block program (real barriers), or a thread per (sum, channel) in the rows way.
#pragma once
#include <vector>

#include "kernels/cuda/channel_combine_block.h"
#include "kernels/cuda/channel_leaves_staged.h"
#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "tests/support/block_runner.h"

namespace dt::test {

/// The leaves of q's rows into `out` as launch_channel_leaves runs them with the way `staged`
/// (true: ChannelLeavesWay::kStaged, false: kRows).
template <int S, class Term>
void channel_leaves_on_grid(const Term& term, const kernels::cuda::ChannelTotals& q,
                            const kernels::cuda::ChannelLeaves& out, bool staged = true) {
    namespace kc = kernels::cuda;
    if (staged && kc::channel_leaves_staged(q)) {
        run_blocks(kc::staged_grid(q), kc::kStagedThreads, kc::staged_shared_floats<S>(),
                   [&](const kernels::common::GridPos& t, float* shared, const HostSync& sync) {
                       kc::channel_leaves_staged_block<S>(t, shared, sync, term, q, out);
                   });
        return;
    }
    kernels::common::for_each_thread(
        kc::elementwise_blocks(q.N * q.C), kc::kElementwiseThreads,
        [&](const kernels::common::GridPos& t) { kc::channel_leaves_body<S>(t, term, q, out); });
}

/// totals[s * C + c] as the CUDA launcher computes them (its way: `staged`, else rows), each
/// finished as `finish` says by the combine that stores it (the atomic mode's: unfinished).
template <int S, class Term>
std::vector<float> channel_totals_on_grid(const Term& term, const kernels::cuda::ChannelTotals& q,
                                          bool staged = true,
                                          const kernels::cuda::ChannelFinish& finish = {}) {
    namespace kc = kernels::cuda;
    using kernels::common::for_each_thread;
    using kernels::common::GridPos;
    const int64_t rows = q.N * q.C;
    std::vector<float> totals(static_cast<std::size_t>(S * q.C), 0.0f);
    kc::ChannelSums out;
    for (int s = 0; s < S; ++s) out.sum[s] = totals.data() + s * q.C;
    out.finish = finish;
    std::vector<float> leaves(static_cast<std::size_t>(S * rows));
    std::vector<kernels::common::KahanSum> kleaves(leaves.size());
    std::vector<kernels::common::ExactAcc> merged(static_cast<std::size_t>(S * q.C));
    for (kernels::common::ExactAcc& a : merged) kernels::common::exact_init(a);
    std::vector<uint32_t> order(static_cast<std::size_t>(q.N));
    const bool atomic = q.accum.mode == kernels::common::AccumMode::kAtomic;
    const bool exact = q.accum.mode == kernels::common::AccumMode::kExact;
    channel_leaves_on_grid<S>(term, q,
                              kc::ChannelLeaves{leaves.data(), kleaves.data(), merged.data(),
                                                atomic ? out : kc::ChannelSums{}},
                              staged);
    if (atomic) return totals;
    if (exact) {
        for_each_thread(
            kc::elementwise_blocks(S * q.C), kc::kElementwiseThreads,
            [&](const GridPos& t) { kc::channel_round_body(t, S, q, merged.data(), out); });
        return totals;
    }
    if (staged && kc::channel_combine_in_blocks(q)) {
        run_blocks(kc::combine_grid(S, q), kc::kCombineThreads, kc::kCombineSharedFloats,
                   [&](const GridPos& t, float* shared, const HostSync& sync) {
                       kc::channel_combine_block(t, shared, sync, S, q, leaves.data(),
                                                 kleaves.data(), out);
                   });
        return totals;
    }
    for_each_thread(1, 1, [&](const GridPos& t) { kc::channel_order_body(t, order.data(), q); });
    for_each_thread(
        kc::elementwise_blocks(S * q.C), kc::kElementwiseThreads, [&](const GridPos& t) {
            kc::channel_combine_body(t, S, q, leaves.data(), kleaves.data(), order.data(), out);
        });
    return totals;
}

}  // namespace dt::test
