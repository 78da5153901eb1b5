// SPDX-License-Identifier: MIT
// bias.grad on the GPU (kernels/bias_add.h's recipe): per-channel totals of dy
// (channel_totals.cuh) in every mode (atomic: each (sample, channel) row's leaf atomic-added);
// a part of a split batch (exact_out) adds its unrounded totals to the caller's accumulators.
#include "kernels/cuda/bias_grad_bodies.h"
#include "kernels/cuda/channel_totals.cuh"

namespace dt::kernels::cuda {

void bias_add_backward(const float* dy, float* db, const BiasAddParams& p) {
    if (p.c <= 0) return;
    if (p.exact_out != nullptr) {  // exact, a part of a split batch: db is not written
        ChannelPart part;
        part.sink.sum[0] = p.exact_out;
        channel_totals<1>("bias_add_backward", BiasGradTerm{dy, p.p}, bias_grad_totals(p),
                          ChannelSums{}, &part);
        return;
    }
    channel_totals<1>("bias_add_backward", BiasGradTerm{dy, p.p}, bias_grad_totals(p),
                      ChannelSums{{db, nullptr}, {}});
}

}  // namespace dt::kernels::cuda
