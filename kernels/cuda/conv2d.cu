// SPDX-License-Identifier: MIT
// conv2d on the GPU: the launchers on the engine's stream of the tiled forward
// (conv2d_tiled_bodies.h; also dgrad's tree mode on 3x3 'same' shapes) and of conv2d_bodies.h,
// one thread per dx element (dgrad; per element and kernel row in the atomic mode) and per dw
// element (wgrad; per element and sample group in the atomic mode). The
// permuted modes draw their order once per call (one thread) into scratch. The backward is still
// per element (docs/gpu.md: tiling it keeping the same chains is the speed work that follows).
#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/linear_bodies.h"

namespace dt::kernels::cuda {

namespace {

template <class Weight>
__global__ void forward_tiled_kernel(const float* x, Weight wt, const float* b, float* y,
                                     Conv2dParams q) {
    __shared__ float shared[kConvTiledShared];
    conv_forward_tiled_block(GridPos::here(), shared, DeviceSync{}, x, wt, b, y, q);
}

/// The tiled forward of convolution q (one block per tile of output channels x positions).
template <class Weight>
void forward_tiled(const char* name, const float* x, const Weight& wt, const float* b, float* y,
                   const Conv2dParams& q) {
    if (q.n * q.co * q.ho * q.wo <= 0) return;
    forward_tiled_kernel<<<static_cast<unsigned>(conv_tiles(q)), kConvTileThreads, 0, stream()>>>(
        x, wt, b, y, q);
    check_launch(name);
}
__global__ void dgrad_kernel(const float* dy, const float* w, float* dx, const uint32_t* order,
                             Conv2dParams p) {
    conv2d_dgrad_body(GridPos::here(), dy, w, dx, order, p);
}
__global__ void dgrad_atomic_kernel(const float* dy, const float* w, float* dx, Conv2dParams p) {
    conv2d_dgrad_atomic_body(GridPos::here(), dy, w, dx, p);
}
__global__ void wgrad_kernel(const float* x, const float* dy, float* dw, const uint32_t* order,
                             Conv2dParams p) {
    conv2d_wgrad_body(GridPos::here(), x, dy, dw, order, p);
}
__global__ void wgrad_atomic_kernel(const float* x, const float* dy, float* dw, Conv2dParams p) {
    conv2d_wgrad_atomic_body(GridPos::here(), x, dy, dw, p);
}
__global__ void wgrad_exact_limbs_kernel(const float* x, const float* dy, common::ExactAcc* accs,
                                         Conv2dParams p) {
    conv2d_wgrad_exact_limbs_body(GridPos::here(), x, dy, accs, p);
}
__global__ void wgrad_exact_round_kernel(const common::ExactAcc* accs, float* dw, int64_t n) {
    conv2d_wgrad_exact_round_body(GridPos::here(), accs, dw, n);
}

}  // namespace

void conv2d_forward(const float* x, const float* w, const float* b, float* y,
                    const Conv2dParams& p) {
    forward_tiled("conv2d_forward", x, ConvWeight{w, p.ci, p.kh, p.kw}, b, y, p);
}

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    const int64_t n = p.n * p.ci * p.h * p.w;
    if (n <= 0) return;
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dx, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        launch_elementwise("conv2d_backward_data (atomic)", dgrad_atomic_kernel, p.kh * n, dy, w,
                           dx, p);
        return;
    }
    if (p.accum.mode == common::AccumMode::kTree && conv2d_dgrad_is_forward(p)) {
        // ORDER: the transposed convolution's forward (kernels/conv2d.h, conv.dgrad tree)
        forward_tiled("conv2d_backward_data", dy, FlippedWeight{w, p.ci, p.kh}, nullptr, dx,
                      conv_dgrad_as_forward(p));
        return;
    }
    const uint32_t* order = permuted_order(p.accum, p.kh * p.kw);
    launch_elementwise("conv2d_backward_data", dgrad_kernel, n, dy, w, dx, order, p);
}

void conv2d_backward_weight(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const int64_t n = p.co * p.ci * p.kh * p.kw;
    if (n <= 0) return;
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dw, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        launch_elementwise("conv2d_backward_weight (atomic)", wgrad_atomic_kernel,
                           (p.n + kConv2dAtomicGroup - 1) / kConv2dAtomicGroup * n, x, dy, dw, p);
        return;
    }
    const uint32_t* order = permuted_order(p.accum, p.n);
    launch_elementwise("conv2d_backward_weight", wgrad_kernel, n, x, dy, dw, order, p);
}

void conv2d_backward_weight_exact_limbs(const float* x, const float* dy, float* dw,
                                        const Conv2dParams& p) {
    const int64_t n = p.co * p.ci * p.kh * p.kw;
    if (n <= 0) return;
    const std::size_t bytes = sizeof(common::ExactAcc) * static_cast<std::size_t>(n);
    auto* accs = static_cast<common::ExactAcc*>(scratch(bytes));
    cudaMemsetAsync(accs, 0, bytes, stream());  // all-zero limbs and flags: exact_init
    launch_elementwise("conv2d_backward_weight (exact, limb atomics)", wgrad_exact_limbs_kernel,
                       (p.n + kConv2dAtomicGroup - 1) / kConv2dAtomicGroup * n, x, dy, accs, p);
    launch_elementwise("conv2d_backward_weight (exact, rounding)", wgrad_exact_round_kernel, n,
                       accs, dw, n);
}

}  // namespace dt::kernels::cuda
