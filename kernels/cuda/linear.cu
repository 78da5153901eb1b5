// SPDX-License-Identifier: MIT
// Linear (and its GEMM) on the GPU: the launchers of linear_bodies.h on the engine's stream;
// the forward and dgrad's tree mode (the same fma chain over o) are the tiled GEMM. The permuted
// modes draw their order once per call (one thread) into scratch.
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/gemm_tiled_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/linear_bodies.h"

namespace dt::kernels::cuda {

namespace {

template <class S>
__global__ void __launch_bounds__(S::kThreads, S::kMinBlocks)
    gemm_tiled_kernel(const float* a, const float* b, float* c, GemmParams p) {
    __shared__ __align__(16) float shared[S::kShared];
    gemm_tiled_block<S>(GridPos::here(), shared, DeviceSync{}, a, b, c, p);
}
__global__ void bias_kernel(const float* b, float* y, LinearParams p, common::Divisor out) {
    linear_bias_body(GridPos::here(), b, y, p, out);
}
__global__ void dgrad_kernel(const float* dy, const float* w, float* dx, const uint32_t* order,
                             LinearParams p) {
    linear_dgrad_body(GridPos::here(), dy, w, dx, order, p);
}
__global__ void dgrad_atomic_kernel(const float* dy, const float* w, float* dx, LinearParams p) {
    linear_dgrad_atomic_body(GridPos::here(), dy, w, dx, p);
}
__global__ void wgrad_kernel(const float* x, const float* dy, float* dw, const uint32_t* order,
                             LinearParams p) {
    linear_wgrad_body(GridPos::here(), x, dy, dw, order, p);
}
__global__ void wgrad_atomic_kernel(const float* x, const float* dy, float* dw, LinearParams p) {
    linear_wgrad_atomic_body(GridPos::here(), x, dy, dw, p);
}

}  // namespace

void gemm(const float* a, const float* b, float* c, const GemmParams& p) {
    if (p.m * p.n <= 0) return;
    // One block per tile of C (grids may have up to 2^31 - 1 blocks in x).
    const auto blocks_of = [&](auto s) { return gemm_tiles<decltype(s)>(p); };
    with_tile_shape(blocks_of, [&](auto shape) {
        using S = decltype(shape);
        gemm_tiled_kernel<S>
            <<<static_cast<unsigned>(blocks_of(shape)), S::kThreads, 0, stream()>>>(a, b, c, p);
    });
    check_launch("gemm");
}

void linear_forward(const float* x, const float* w, const float* b, float* y,
                    const LinearParams& p) {
    // ORDER: the fma chain over i ascending (B = W^T), then + b[o] once.
    gemm(x, w, y, GemmParams{.m = p.n, .n = p.out, .k = p.in, .trans_b = true});
    if (b != nullptr)
        launch_elementwise("linear_forward (bias)", bias_kernel, p.n * p.out, b, y, p,
                           common::make_divisor(p.out));
}

void linear_backward_data(const float* dy, const float* w, float* dx, const LinearParams& p) {
    const int64_t n = p.n * p.in;
    if (n <= 0) return;
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dx, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        launch_elementwise("linear_backward_data (atomic)", dgrad_atomic_kernel,
                           (p.out + kLinearAtomicChunk - 1) / kLinearAtomicChunk * n, dy, w, dx, p);
        return;
    }
    if (p.accum.mode == common::AccumMode::kTree) {
        // ORDER: the fma chain over o ascending = the GEMM dY (N x O) . W (O x I), tiled
        gemm(dy, w, dx, GemmParams{.m = p.n, .n = p.in, .k = p.out});
        return;
    }
    const uint32_t* order = permuted_order(p.accum, p.out);
    launch_elementwise("linear_backward_data", dgrad_kernel, n, dy, w, dx, order, p);
}

void linear_backward_weight(const float* x, const float* dy, float* dw, const LinearParams& p) {
    const int64_t n = p.out * p.in;
    if (n <= 0) return;
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dw, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        launch_elementwise("linear_backward_weight (atomic)", wgrad_atomic_kernel,
                           (p.n + kLinearAtomicGroup - 1) / kLinearAtomicGroup * n, x, dy, dw, p);
        return;
    }
    const uint32_t* order = permuted_order(p.accum, p.n);
    launch_elementwise("linear_backward_weight", wgrad_kernel, n, x, dy, dw, order, p);
}

}  // namespace dt::kernels::cuda
