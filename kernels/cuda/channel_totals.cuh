// SPDX-License-Identifier: MIT
// Launcher of the per-channel totals of channel_totals_bodies.h, for the .cu files whose sites
// have that shape (bias_grad.cu, batchnorm2d.cu): scratch for the leaves and the sample order,
// then leaves, order and combine kernels on the engine's stream (tree, kahan: the combine block
// program of channel_combine_block.h, unless the way says rows); atomic: totals zeroed, leaves
// atomic-added; exact: the channels' accumulators zeroed, the leaves merged into them with
// integer atomics, then rounded. out.sum[s][c] receives total s of channel c. A part of a split
// batch (ChannelPart) also hands on its own totals and has the hook of kernels/batchnorm2d.h
// complete them over every part, through the host (the hook is the engine's collective).
#pragma once
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/cuda/channel_combine_block.h"
#include "kernels/cuda/channel_leaves_staged.h"
#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

// The kernels are internal to each .cu that includes this header (an `inline __global__` is not
// inline for nvcc, which warns, and only a CUDA include path marked -isystem hid that warning).
namespace {

template <int S, class Term>
__global__ void channel_leaves_kernel(Term term, ChannelTotals q, ChannelLeaves out) {
    channel_leaves_body<S>(GridPos::here(), term, q, out);
}

template <int S, class Term>
__global__ void channel_leaves_staged_kernel(Term term, ChannelTotals q, ChannelLeaves out) {
    __shared__ float shared[staged_shared_floats<S>()];
    channel_leaves_staged_block<S>(GridPos::here(), shared, DeviceSync{}, term, q, out);
}

__global__ void channel_order_kernel(uint32_t* order, ChannelTotals q) {
    channel_order_body(GridPos::here(), order, q);
}

__global__ void channel_combine_kernel(int S, ChannelTotals q, const float* leaves,
                                       const common::KahanSum* kleaves, const uint32_t* order,
                                       ChannelSums out) {
    channel_combine_body(GridPos::here(), S, q, leaves, kleaves, order, out);
}

__global__ void channel_combine_block_kernel(int S, ChannelTotals q, const float* leaves,
                                             const common::KahanSum* kleaves, ChannelSums out) {
    __shared__ float shared[kCombineSharedFloats];
    channel_combine_block(GridPos::here(), shared, DeviceSync{}, S, q, leaves, kleaves, out);
}

__global__ void channel_part_kernel(int S, ChannelTotals q, const common::ExactAcc* merged,
                                    ChannelSinks sink, ChannelSums local) {
    channel_part_body(GridPos::here(), S, q, merged, sink, local);
}
__global__ void channel_round_kernel(int S, ChannelTotals q, const common::ExactAcc* merged,
                                     ChannelSums out) {
    channel_round_body(GridPos::here(), S, q, merged, out);
}

/// The leaves of q's rows into `out`: the staged block program for long rows (unless
/// channel_leaves_way() says rows), else one thread per row.
template <int S, class Term>
void launch_channel_leaves(const char* name, const Term& term, const ChannelTotals& q,
                           const ChannelLeaves& out) {
    if (channel_leaves_way() == ChannelLeavesWay::kRows || !channel_leaves_staged(q)) {
        launch_elementwise(name, channel_leaves_kernel<S, Term>, q.N * q.C, term, q, out);
        return;
    }
    channel_leaves_staged_kernel<S, Term><<<staged_grid(q), kStagedThreads, 0, stream()>>>(term, q,
                                                                                          out);
    check_launch(name);
}

}  // namespace

/// A part of a split batch (engine/runtime/batch_split.h): what channel_totals also does.
struct ChannelPart {
    ChannelSinks sink;  // exact: this part's unrounded totals added here (device), where set
    ChannelSums local;  // this part's own totals, where set (device)
    const BatchNormParts* parts = nullptr;  // completes `out` over every part (host hook)
};

/// The hook's exact completion of merged[s * C + c] (device): through the host, in the hook's
/// layout [c * S + s] (kernels/batchnorm2d.h), and back.
inline void complete_exact(const BatchNormParts& parts, common::ExactAcc* merged, int S,
                           int64_t C) {
    const std::size_t n = static_cast<std::size_t>(S * C), bytes = n * sizeof(common::ExactAcc);
    std::vector<common::ExactAcc> dev(n), hook(n);
    copy_to_host(dev.data(), merged, bytes);
    for (int64_t c = 0; c < C; ++c)
        for (int s = 0; s < S; ++s) hook[c * S + s] = dev[s * C + c];
    parts.exact(parts.ctx, hook.data(), S * C);
    for (int64_t c = 0; c < C; ++c)
        for (int s = 0; s < S; ++s) dev[s * C + c] = hook[c * S + s];
    copy_from_host(merged, dev.data(), bytes);
}

/// The hook's completion of the float totals out.sum[s][c] (device) in the mode `spec`.
inline void complete_floats(const BatchNormParts& parts, const ChannelSums& out, int S, int64_t C,
                            const common::AccumSpec& spec) {
    std::vector<float> col(static_cast<std::size_t>(C)), hook(static_cast<std::size_t>(S * C));
    for (int s = 0; s < S; ++s) {
        copy_to_host(col.data(), out.sum[s], sizeof(float) * col.size());
        for (int64_t c = 0; c < C; ++c) hook[c * S + s] = col[c];
    }
    parts.floats(parts.ctx, hook.data(), S * C, spec);
    for (int s = 0; s < S; ++s) {
        for (int64_t c = 0; c < C; ++c) col[c] = hook[c * S + s];
        copy_from_host(out.sum[s], col.data(), sizeof(float) * col.size());
    }
}

/// The exact mode: the channels' accumulators zeroed, the leaves merged into them, for a part
/// its share handed on (part.sink, part.local) and the totals completed over every part
/// (part.parts), then rounded into out (where set).
template <int S, class Term>
void channel_totals_exact(const char* name, const Term& term, const ChannelTotals& q,
                          const ChannelSums& out, const ChannelPart& part) {
    const std::size_t bytes = sizeof(common::ExactAcc) * static_cast<std::size_t>(S * q.C);
    auto* merged = static_cast<common::ExactAcc*>(scratch(bytes));
    if (merged == nullptr) return;  // recorded; the engine's next check reports it
    cudaMemsetAsync(merged, 0, bytes, stream());  // all-zero limbs and flags: exact_init
    ChannelLeaves leaves;
    leaves.accs = merged;
    launch_channel_leaves<S>(name, term, q, leaves);
    bool hands_on = false;
    for (int s = 0; s < S; ++s)
        hands_on = hands_on || part.sink.sum[s] != nullptr || part.local.sum[s] != nullptr;
    if (hands_on)
        launch_elementwise(name, channel_part_kernel, S * q.C, S, q,
                           static_cast<const common::ExactAcc*>(merged), part.sink, part.local);
    if (part.parts != nullptr) complete_exact(*part.parts, merged, S, q.C);
    launch_elementwise(name, channel_round_kernel, S * q.C, S, q,
                       static_cast<const common::ExactAcc*>(merged), out);
}

/// channel_totals of a whole batch (or a part's own totals) in the float modes.
template <int S, class Term>
void channel_totals_whole(const char* name, const Term& term, const ChannelTotals& q,
                          const ChannelSums& out) {
    const int64_t rows = q.N * q.C;
    const common::AccumMode mode = q.accum.mode;
    if (mode == common::AccumMode::kAtomic) {
        for (int k = 0; k < S; ++k)
            cudaMemsetAsync(out.sum[k], 0, sizeof(float) * static_cast<std::size_t>(q.C), stream());
        ChannelLeaves leaves;
        leaves.atomic_out = out;
        launch_channel_leaves<S>(name, term, q, leaves);
        return;
    }
    const std::size_t leaf =
        mode == common::AccumMode::kKahan ? sizeof(common::KahanSum) : sizeof(float);
    const std::size_t leaves = static_cast<std::size_t>(S * rows) * leaf;
    const std::size_t offset = (leaves + 255) / 256 * 256;
    char* s =
        static_cast<char*>(scratch(offset + sizeof(uint32_t) * static_cast<std::size_t>(q.N)));
    if (s == nullptr) return;  // recorded; the engine's next check reports it
    uint32_t* order = reinterpret_cast<uint32_t*>(s + offset);
    launch_channel_leaves<S>(name, term, q,
                             ChannelLeaves{reinterpret_cast<float*>(s),
                                           reinterpret_cast<common::KahanSum*>(s), nullptr,
                                           ChannelSums{}});
    if (channel_leaves_way() != ChannelLeavesWay::kRows && channel_combine_in_blocks(q)) {
        channel_combine_block_kernel<<<combine_grid(S, q), kCombineThreads, 0, stream()>>>(
            S, q, reinterpret_cast<const float*>(s), reinterpret_cast<const common::KahanSum*>(s),
            out);
        check_launch(name);
        return;
    }
    if (mode == common::AccumMode::kPermuted) {
        channel_order_kernel<<<1, 1, 0, stream()>>>(order, q);
        check_launch(name);
    }
    launch_elementwise(name, channel_combine_kernel, S * q.C, S, q,
                       reinterpret_cast<const float*>(s),
                       reinterpret_cast<const common::KahanSum*>(s),
                       static_cast<const uint32_t*>(order), out);
}

/// Totals s of every channel into out.sum[s]; for a part of a split batch (`part`), also what
/// ChannelPart says (float modes: local is a copy of this part's totals, then the hook
/// completes out).
template <int S, class Term>
void channel_totals(const char* name, const Term& term, const ChannelTotals& q,
                    const ChannelSums& out, const ChannelPart* part = nullptr) {
    if (q.C <= 0) return;
    if (q.accum.mode == common::AccumMode::kExact) {
        channel_totals_exact<S>(name, term, q, out, part != nullptr ? *part : ChannelPart{});
        return;
    }
    channel_totals_whole<S>(name, term, q, out);
    if (part == nullptr) return;
    for (int s = 0; s < S; ++s)
        if (part->local.sum[s] != nullptr)
            device_copy(part->local.sum[s], out.sum[s],
                        sizeof(float) * static_cast<std::size_t>(q.C));
    if (part->parts != nullptr) complete_floats(*part->parts, out, S, q.C, q.accum);
}

}  // namespace dt::kernels::cuda
