// SPDX-License-Identifier: MIT
// Pooling on the GPU: the launchers of pool2d_bodies.h on the engine's stream. The permuted
// backward draws the window permutation once per call (one thread) into scratch, with its
// inverse (the rank of each window), which the gather threads sort their windows by.
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pool2d_bodies.h"

namespace dt::kernels::cuda {

namespace {

__global__ void maxpool_forward_kernel(const float* x, float* y, int32_t* am, Pool2dParams p,
                                       PoolDivisors d) {
    maxpool2d_forward_body(GridPos::here(), x, y, am, p, d);
}
__global__ void avgpool_forward_kernel(const float* x, float* y, Pool2dParams p, PoolDivisors d) {
    avgpool2d_forward_body(GridPos::here(), x, y, p, d);
}
__global__ void global_forward_kernel(const float* x, float* y, int64_t planes, int64_t hw) {
    global_avgpool_forward_body(GridPos::here(), x, y, planes, hw);
}
__global__ void global_backward_kernel(const float* dy, float* dx, int64_t planes,
                                       common::Divisor hw) {
    global_avgpool_backward_body(GridPos::here(), dy, dx, planes, hw);
}
__global__ void rank_kernel(uint32_t* order, uint32_t* rank, Pool2dParams p) {
    pool_rank_body(GridPos::here(), order, rank, p);
}
__global__ void gather_kernel(PoolContrib src, const uint32_t* rank, float* dx, Pool2dParams p,
                              PoolDivisors d) {
    pool_backward_gather_body(GridPos::here(), src, rank, dx, p, d);
}
__global__ void atomic_kernel(PoolContrib src, float* dx, Pool2dParams p, PoolDivisors d) {
    pool_backward_atomic_body(GridPos::here(), src, dx, p, d);
}

void backward(PoolContrib src, float* dx, const Pool2dParams& p, const char* name) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    const common::AccumMode mode = p.stride < p.kernel ? p.accum.mode : common::AccumMode::kTree;
    if (mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dx, 0, sizeof(float) * static_cast<std::size_t>(planes * in), stream());
        launch_elementwise(name, atomic_kernel, planes * out, src, dx, p, pool_out_divisors(p));
        return;
    }
    uint32_t* rank = nullptr;
    if (mode == common::AccumMode::kPermuted) {
        const int64_t cover = (p.kernel + p.stride - 1) / p.stride;
        if (cover * cover > kPoolMaxCover) {
            note_error(
                "pooling backward (permuted): more windows cover a cell than the gather "
                "sorts",
                static_cast<int>(cudaErrorInvalidValue));
            return;
        }
        uint32_t* s = static_cast<uint32_t*>(scratch(sizeof(uint32_t) * 2 * out));
        if (s == nullptr) return;  // recorded
        rank = s + out;
        rank_kernel<<<1, 1, 0, stream()>>>(s, rank, p);
        check_launch(name);
    }
    launch_elementwise(name, gather_kernel, planes * in, src, rank, dx, p, pool_in_divisors(p));
}

}  // namespace

void maxpool2d_forward(const float* x, float* y, int32_t* argmax, const Pool2dParams& p) {
    launch_elementwise("maxpool2d_forward", maxpool_forward_kernel, p.N * p.C * p.Ho * p.Wo, x, y,
                       argmax, p, pool_out_divisors(p));
}
void maxpool2d_backward(const float* dy, const int32_t* argmax, float* dx, const Pool2dParams& p) {
    backward(PoolContrib{dy, argmax}, dx, p, "maxpool2d_backward");
}
void avgpool2d_forward(const float* x, float* y, const Pool2dParams& p) {
    launch_elementwise("avgpool2d_forward", avgpool_forward_kernel, p.N * p.C * p.Ho * p.Wo, x, y,
                       p, pool_out_divisors(p));
}
void avgpool2d_backward(const float* dy, float* dx, const Pool2dParams& p) {
    backward(PoolContrib{dy, nullptr}, dx, p, "avgpool2d_backward");
}
void global_avgpool_forward(const float* x, float* y, int64_t planes, int64_t hw) {
    launch_elementwise("global_avgpool_forward", global_forward_kernel, planes, x, y, planes, hw);
}
void global_avgpool_backward(const float* dy, float* dx, int64_t planes, int64_t hw) {
    launch_elementwise("global_avgpool_backward", global_backward_kernel, planes * hw, dy, dx,
                       planes, common::make_divisor(hw));
}

}  // namespace dt::kernels::cuda
