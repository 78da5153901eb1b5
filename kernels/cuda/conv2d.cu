// SPDX-License-Identifier: MIT
// conv2d's forward and dgrad on the GPU (wgrad: conv2d_wgrad.cu): the launchers on the engine's
// stream of the tiled block programs (conv2d_tiled_bodies.h: the forward, also dgrad's tree mode
// on 3x3 'same' shapes; conv2d_dgrad_tiled_bodies.h: dgrad's exact and atomic modes on 3x3
// 'same' shapes as the transposed forward cut per tap or split per kernel row, elsewhere its
// per-tap values) and of conv2d_bodies.h's per-thread dgrad sums, one thread per dx element (per
// element and kernel row in the atomic mode). The permuted modes draw their order once per call
// (one thread) into scratch.

#include <type_traits>

#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_dgrad_tiled_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/linear_bodies.h"

namespace dt::kernels::cuda {

namespace {

/// The most bytes of conv.dgrad's per-tap values held at once (samples are done in slices):
/// 9 values per dx element of a 3x3 layer.
constexpr std::size_t kDgradTapBytes = std::size_t{256} << 20;

template <class S, class Weight>
__global__ void __launch_bounds__(S::kThreads, S::kMinBlocks)
    forward_tiled_kernel(const float* x, Weight wt, const float* b, float* y, Conv2dParams q) {
    __shared__ __align__(16) float shared[S::kShared];
    conv_forward_tiled_block<S>(GridPos::here(), shared, DeviceSync{}, x, wt, b, y, q);
}

/// The tiled forward of convolution q (one block per tile of output channels x positions).
template <class Weight>
void forward_tiled(const char* name, const float* x, const Weight& wt, const float* b, float* y,
                   const Conv2dParams& q) {
    if (q.n * q.co * q.ho * q.wo <= 0) return;
    const auto blocks_of = [&](auto s) { return conv_tiles<decltype(s)>(q); };
    with_tile_shape(blocks_of, [&](auto shape) {
        using S = decltype(shape);
        forward_tiled_kernel<S, Weight>
            <<<static_cast<unsigned>(blocks_of(shape)), S::kThreads, 0, stream()>>>(x, wt, b, y, q);
    });
    check_launch(name);
}
template <class TapValue>
__global__ void dgrad_kernel(TapValue t, float* dx, const uint32_t* order, Conv2dParams p,
                             DgradDivisors d, int64_t e0, int64_t e1) {
    conv2d_dgrad_body(GridPos::here(), t, dx, order, p, d, e0, e1);
}
template <class TapValue>
__global__ void dgrad_atomic_kernel(TapValue t, float* dx, Conv2dParams p, DgradDivisors d,
                                    int64_t e0, int64_t e1) {
    conv2d_dgrad_atomic_body(GridPos::here(), t, dx, p, d, e0, e1);
}
template <class S>
__global__ void __launch_bounds__(S::kThreads, S::kMinBlocks)
    dgrad_taps_kernel(const float* dy, const float* w, float* taps, Conv2dParams p, int64_t s_lo,
                      int64_t s_hi) {
    __shared__ __align__(16) float shared[S::kShared];
    conv_dgrad_taps_tiled_block<S>(GridPos::here(), shared, DeviceSync{}, dy, w, taps, p, s_lo,
                                   s_hi);
}
template <class S>
__global__ void __launch_bounds__(S::kThreads, kCutMinBlocks<S>)
    dgrad_exact_cut_kernel(const float* dy, const float* w, float* dx, Conv2dParams p,
                           DgradDivisors d) {
    extern __shared__ __align__(16) float shared[];  // kDgradCutShared<S> floats
    conv_dgrad_exact_cut_block<S>(GridPos::here(), shared, DeviceSync{}, dy, w, dx, p, d);
}
template <class S>
void launch_exact_cut(const float* dy, const float* w, float* dx, const Conv2dParams& p,
                      const DgradDivisors& d) {
    const std::size_t bytes = sizeof(float) * kDgradCutShared<S>;
    if constexpr (!std::is_same_v<S, SmallTile>) {
        if (!dynamic_shared_ok<dgrad_exact_cut_kernel<S>>(bytes)) {
            launch_exact_cut<SmallTile>(dy, w, dx, p, d);
            return;
        }
    }
    dgrad_exact_cut_kernel<S>
        <<<static_cast<unsigned>(conv_dgrad_cut_tiles<S>(p)), S::kThreads, bytes, stream()>>>(
            dy, w, dx, p, d);
    check_launch(by_tile<S>("conv2d_backward_data (exact, cut per tap, small tile)",
                            "conv2d_backward_data (exact, cut per tap, large tile)",
                            "conv2d_backward_data (exact, cut per tap, tiny tile)"));
}
template <class S>
__global__ void __launch_bounds__(S::kThreads, S::kMinBlocks)
    dgrad_atomic_split_kernel(const float* dy, const float* w, float* dx, Conv2dParams p,
                              DgradDivisors d) {
    __shared__ __align__(16) float shared[S::kShared];
    conv_dgrad_atomic_split_block<S>(GridPos::here(), shared, DeviceSync{}, dy, w, dx, p, d);
}
/// conv.dgrad through the per-tap values (every mode; tree only off conv2d_dgrad_is_forward
/// shapes): those of slices of samples whose values fit kDgradTapBytes (tiled), then each
/// element's sum of them; the tap permutation (permuted) drawn once.
void dgrad_via_taps(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    const int64_t n = p.n * p.ci * p.h * p.w;
    const bool atomic = p.accum.mode == common::AccumMode::kAtomic;
    const int64_t P = p.ho * p.wo, HW = p.h * p.w;
    const SlicedScratch sc =
        sliced_scratch(p.kh * p.kw * p.ci * P, p.n, kDgradTapBytes, p.accum, p.kh * p.kw);
    if (sc.values == nullptr) return;  // recorded; the engine's next check reports it
    const int64_t slice = sc.slice;    // samples
    if (atomic) cudaMemsetAsync(dx, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
    for (int64_t s_lo = 0; s_lo < p.n; s_lo += slice) {
        const int64_t s_hi = p.n - s_lo < slice ? p.n : s_lo + slice;
        const auto blocks_of = [&](auto s) {
            return conv_dgrad_tap_tiles<decltype(s)>(p, s_lo, s_hi);
        };
        with_tile_shape(blocks_of, [&](auto shape) {
            using S = decltype(shape);
            const int64_t blocks = blocks_of(shape);
            if (blocks <= 0) return;
            dgrad_taps_kernel<S><<<static_cast<unsigned>(blocks), S::kThreads, 0, stream()>>>(
                dy, w, sc.values, p, s_lo, s_hi);
            check_launch("conv2d_backward_data (taps)");
        });
        const DgradTapBuffer t{sc.values, s_lo, (s_hi - s_lo) * P, p.ci, p.ho, p.wo};
        const int64_t e0 = s_lo * p.ci * HW, e1 = s_hi * p.ci * HW;
        if (atomic)
            launch_elementwise("conv2d_backward_data (atomic)", dgrad_atomic_kernel<DgradTapBuffer>,
                               p.kh * (e1 - e0), t, dx, p, conv_dgrad_divisors(p, e1 - e0), e0,
                               e1);
        else
            launch_elementwise("conv2d_backward_data", dgrad_kernel<DgradTapBuffer>, e1 - e0, t, dx,
                               sc.order, p, conv_dgrad_divisors(p, e1 - e0), e0, e1);
    }
}

/// dgrad's exact and atomic modes on a conv2d_dgrad_is_forward shape as the transposed
/// forward (conv2d_dgrad_tiled_bodies.h): cut per tap and folded per element (exact), split per
/// kernel row and atomic-added (atomic).
void dgrad_as_forward_cut(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    const int64_t n = p.n * p.ci * p.h * p.w;
    const DgradDivisors d = conv_dgrad_divisors(p, n);
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dx, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        const auto blocks_of = [&](auto s) { return p.kh * conv_dgrad_cut_tiles<decltype(s)>(p); };
        with_tile_shape(blocks_of, [&](auto shape) {
            using S = decltype(shape);
            dgrad_atomic_split_kernel<S>
                <<<static_cast<unsigned>(blocks_of(shape)), S::kThreads, 0, stream()>>>(dy, w, dx,
                                                                                        p, d);
        });
        check_launch("conv2d_backward_data (atomic, split per kernel row)");
        return;
    }
    const auto blocks_of = [&](auto s) { return conv_dgrad_cut_tiles<decltype(s)>(p); };
    with_tile_shape(blocks_of,
                    [&](auto shape) { launch_exact_cut<decltype(shape)>(dy, w, dx, p, d); });
}

}  // namespace

void conv2d_forward(const float* x, const float* w, const float* b, float* y,
                    const Conv2dParams& p) {
    forward_tiled("conv2d_forward", x, ConvWeight{w, p.ci, p.kh, p.kw}, b, y, p);
}

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    if (p.n * p.ci * p.h * p.w <= 0) return;
    const common::AccumMode mode = p.accum.mode;
    if (conv2d_dgrad_is_forward(p)) {
        if (mode == common::AccumMode::kTree) {
            // ORDER: the transposed convolution's forward (kernels/conv2d.h, conv.dgrad tree)
            forward_tiled("conv2d_backward_data", dy, FlippedWeight{w, p.ci, p.kh}, nullptr, dx,
                          conv_dgrad_as_forward(p));
            return;
        }
        if ((mode == common::AccumMode::kExact || mode == common::AccumMode::kAtomic) && p.co > 0) {
            dgrad_as_forward_cut(dy, w, dx, p);
            return;
        }
    }
    dgrad_via_taps(dy, w, dx, p);
}

void conv2d_backward_data_taps(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    if (p.accum.mode == common::AccumMode::kTree && conv2d_dgrad_is_forward(p)) {
        conv2d_backward_data(dy, w, dx, p);  // the recipe is the transposed forward there
        return;
    }
    if (p.n * p.ci * p.h * p.w > 0) dgrad_via_taps(dy, w, dx, p);
}

void conv2d_backward_data_per_element(const float* dy, const float* w, float* dx,
                                      const Conv2dParams& p) {
    const int64_t n = p.n * p.ci * p.h * p.w;
    if (n <= 0) return;
    if (p.accum.mode == common::AccumMode::kTree && conv2d_dgrad_is_forward(p)) {
        conv2d_backward_data(dy, w, dx, p);  // the transposed forward: no per-tap values
        return;
    }
    const DgradTapChain t{dy, w, p};
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dx, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        launch_elementwise("conv2d_backward_data (atomic, per element)",
                           dgrad_atomic_kernel<DgradTapChain>, p.kh * n, t, dx, p,
                           conv_dgrad_divisors(p, n), int64_t{0}, n);
        return;
    }
    const uint32_t* order = permuted_order(p.accum, p.kh * p.kw);
    launch_elementwise("conv2d_backward_data (per element)", dgrad_kernel<DgradTapChain>, n, t, dx,
                       order, p, conv_dgrad_divisors(p, n), int64_t{0}, n);
}

}  // namespace dt::kernels::cuda
