// SPDX-License-Identifier: MIT
// The launch sequence of kernels/cuda/channel_totals.cuh run on the host over whole grids (the
// leaves, order and combine bodies, or the atomic leaves into zeroed totals), for the host-grid
// tests of the kernels built on it (bias.grad, batch-norm).
#pragma once
#include <vector>

#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"

namespace dt::test {

/// totals[s * C + c] as the CUDA launcher computes them.
template <int S, class Term>
std::vector<float> channel_totals_on_grid(const Term& term, const kernels::cuda::ChannelTotals& q) {
    namespace kc = kernels::cuda;
    using kernels::common::for_each_thread;
    using kernels::common::GridPos;
    const int64_t rows = q.N * q.C;
    std::vector<float> totals(static_cast<std::size_t>(S * q.C), 0.0f);
    kc::ChannelSums out;
    for (int s = 0; s < S; ++s) out.sum[s] = totals.data() + s * q.C;
    std::vector<float> leaves(static_cast<std::size_t>(S * rows));
    std::vector<kernels::common::KahanSum> kleaves(leaves.size());
    std::vector<kernels::common::ExactAcc> accs(leaves.size());
    std::vector<uint32_t> order(static_cast<std::size_t>(q.N));
    const bool atomic = q.accum.mode == kernels::common::AccumMode::kAtomic;
    for_each_thread(kc::elementwise_blocks(rows), kc::kElementwiseThreads, [&](const GridPos& t) {
        kc::channel_leaves_body<S>(t, term, q, leaves.data(), kleaves.data(), accs.data(),
                                   atomic ? out : kc::ChannelSums{});
    });
    if (atomic) return totals;
    for_each_thread(1, 1, [&](const GridPos& t) { kc::channel_order_body(t, order.data(), q); });
    for_each_thread(kc::elementwise_blocks(S * q.C), kc::kElementwiseThreads,
                    [&](const GridPos& t) {
                        kc::channel_combine_body(t, S, q, leaves.data(), kleaves.data(),
                                                 accs.data(), order.data(), out);
                    });
    return totals;
}

}  // namespace dt::test
