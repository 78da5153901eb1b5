// SPDX-License-Identifier: MIT
// Launcher of the per-channel totals of channel_totals_bodies.h, for the .cu files whose sites
// have that shape (bias_grad.cu, batchnorm2d.cu): scratch for the leaves and the sample order,
// then leaves, order and combine kernels on the engine's stream; atomic: totals zeroed, leaves
// atomic-added. out.sum[s][c] receives total s of channel c.
#pragma once
#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

template <int S, class Term>
__global__ void channel_leaves_kernel(Term term, ChannelTotals q, float* leaves,
                                      common::KahanSum* kleaves, common::ExactAcc* accs,
                                      ChannelSums atomic_out) {
    channel_leaves_body<S>(GridPos::here(), term, q, leaves, kleaves, accs, atomic_out);
}

__global__ inline void channel_order_kernel(uint32_t* order, ChannelTotals q) {
    channel_order_body(GridPos::here(), order, q);
}

__global__ inline void channel_combine_kernel(int S, ChannelTotals q, const float* leaves,
                                              const common::KahanSum* kleaves,
                                              const common::ExactAcc* accs, const uint32_t* order,
                                              ChannelSums out) {
    channel_combine_body(GridPos::here(), S, q, leaves, kleaves, accs, order, out);
}

template <int S, class Term>
void channel_totals(const char* name, const Term& term, const ChannelTotals& q,
                    const ChannelSums& out) {
    const int64_t rows = q.N * q.C;
    const common::AccumMode mode = q.accum.mode;
    if (q.C <= 0) return;
    if (mode == common::AccumMode::kAtomic) {
        for (int k = 0; k < S; ++k)
            cudaMemsetAsync(out.sum[k], 0, sizeof(float) * static_cast<std::size_t>(q.C), stream());
        launch_elementwise(name, channel_leaves_kernel<S, Term>, rows, term, q,
                           static_cast<float*>(nullptr), static_cast<common::KahanSum*>(nullptr),
                           static_cast<common::ExactAcc*>(nullptr), out);
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
    launch_elementwise(name, channel_leaves_kernel<S, Term>, rows, term, q,
                       reinterpret_cast<float*>(s), reinterpret_cast<common::KahanSum*>(s),
                       reinterpret_cast<common::ExactAcc*>(s), ChannelSums{});
    if (mode == common::AccumMode::kPermuted) {
        channel_order_kernel<<<1, 1, 0, stream()>>>(order, q);
        check_launch(name);
    }
    launch_elementwise(
        name, channel_combine_kernel, S * q.C, S, q, reinterpret_cast<const float*>(s),
        reinterpret_cast<const common::KahanSum*>(s), reinterpret_cast<const common::ExactAcc*>(s),
        static_cast<const uint32_t*>(order), out);
}

}  // namespace dt::kernels::cuda
