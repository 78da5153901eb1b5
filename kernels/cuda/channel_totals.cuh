// SPDX-License-Identifier: MIT
// Launcher of the per-channel totals of channel_totals_bodies.h, for the .cu files whose sites
// have that shape (bias_grad.cu, batchnorm2d.cu): scratch for the leaves and the sample order,
// then leaves, order and combine kernels on the engine's stream; atomic: totals zeroed, leaves
// atomic-added. totals[s * C + c] receives total s of channel c.
#pragma once
#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

template <int S, class Term>
__global__ void channel_leaves_kernel(Term term, ChannelTotals q, float* leaves,
                                      common::KahanSum* kleaves, common::ExactAcc* accs,
                                      float* atomic_totals) {
    channel_leaves_body<S>(GridPos::here(), term, q, leaves, kleaves, accs, atomic_totals);
}

__global__ inline void channel_order_kernel(uint32_t* order, ChannelTotals q) {
    channel_order_body(GridPos::here(), order, q);
}

__global__ inline void channel_combine_kernel(int S, ChannelTotals q, const float* leaves,
                                              const common::KahanSum* kleaves,
                                              const common::ExactAcc* accs, const uint32_t* order,
                                              float* totals) {
    channel_combine_body(GridPos::here(), S, q, leaves, kleaves, accs, order, totals);
}

template <int S, class Term>
void channel_totals(const char* name, const Term& term, const ChannelTotals& q, float* totals) {
    const int64_t rows = q.N * q.C;
    const common::AccumMode mode = q.accum.mode;
    if (q.C <= 0) return;
    if (mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(totals, 0, sizeof(float) * static_cast<std::size_t>(S * q.C), stream());
        if (rows > 0) {
            channel_leaves_kernel<S>
                <<<elementwise_blocks(rows), kElementwiseThreads, 0, stream()>>>(
                    term, q, nullptr, nullptr, nullptr, totals);
            check_launch(name);
        }
        return;
    }
    const std::size_t leaf = mode == common::AccumMode::kKahan   ? sizeof(common::KahanSum)
                             : mode == common::AccumMode::kExact ? sizeof(common::ExactAcc)
                                                                 : sizeof(float);
    const std::size_t leaves = static_cast<std::size_t>(S * rows) * leaf;
    const std::size_t offset = (leaves + 255) / 256 * 256;
    char* s =
        static_cast<char*>(scratch(offset + sizeof(uint32_t) * static_cast<std::size_t>(q.N)));
    if (s == nullptr) return;  // recorded; the engine's next check reports it
    uint32_t* order = reinterpret_cast<uint32_t*>(s + offset);
    if (rows > 0) {
        channel_leaves_kernel<S><<<elementwise_blocks(rows), kElementwiseThreads, 0, stream()>>>(
            term, q, reinterpret_cast<float*>(s), reinterpret_cast<common::KahanSum*>(s),
            reinterpret_cast<common::ExactAcc*>(s), nullptr);
        check_launch(name);
    }
    if (mode == common::AccumMode::kPermuted) {
        channel_order_kernel<<<1, 1, 0, stream()>>>(order, q);
        check_launch(name);
    }
    channel_combine_kernel<<<elementwise_blocks(S * q.C), kElementwiseThreads, 0, stream()>>>(
        S, q, reinterpret_cast<const float*>(s), reinterpret_cast<const common::KahanSum*>(s),
        reinterpret_cast<const common::ExactAcc*>(s), order, totals);
    check_launch(name);
}

}  // namespace dt::kernels::cuda
