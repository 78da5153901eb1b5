// SPDX-License-Identifier: MIT
// bias.grad on the GPU (kernels/bias_add.h's recipe): per-channel totals of dy
// (channel_totals.cuh) in every mode but atomic, whose sample groups bias_grad_atomic_body has;
// a part of a split batch (exact_out) adds its unrounded totals to the caller's accumulators.
#include "kernels/cuda/bias_grad_bodies.h"
#include "kernels/cuda/channel_totals.cuh"

namespace dt::kernels::cuda {

namespace {
__global__ void atomic_kernel(const float* dy, float* db, BiasAddParams p) {
    bias_grad_atomic_body(GridPos::here(), dy, db, p);
}
}  // namespace

void bias_add_backward(const float* dy, float* db, const BiasAddParams& p) {
    if (p.c <= 0) return;
    if (p.exact_out != nullptr) {  // exact, a part of a split batch: db is not written
        ChannelPart part;
        part.sink.sum[0] = p.exact_out;
        channel_totals<1>("bias_add_backward", BiasGradTerm{dy, p.p}, bias_grad_totals(p),
                          ChannelSums{}, &part);
        return;
    }
    if (p.accum.mode != common::AccumMode::kAtomic) {
        channel_totals<1>("bias_add_backward", BiasGradTerm{dy, p.p}, bias_grad_totals(p),
                          ChannelSums{{db, nullptr}});
        return;
    }
    cudaMemsetAsync(db, 0, sizeof(float) * static_cast<std::size_t>(p.c), stream());
    launch_elementwise("bias_add_backward (atomic)", atomic_kernel,
                       (p.n + kBiasAddAtomicGroup - 1) / kBiasAddAtomicGroup * p.c, dy, db, p);
}

}  // namespace dt::kernels::cuda
