// SPDX-License-Identifier: MIT
// conv2d on the GPU: the launchers on the engine's stream of the tiled block programs
// (conv2d_tiled_bodies.h: the forward, also dgrad's tree mode on 3x3 'same' shapes; wgrad's
// group chains, atomic-added in the atomic mode, else stored as leaves and combined per element
// by conv2d_bodies.h; conv2d_dgrad_tiled_bodies.h: dgrad's exact and atomic modes on 3x3 'same'
// shapes as the transposed forward cut per tap or split per kernel row, elsewhere its per-tap
// values) and of conv2d_bodies.h's per-thread dgrad sums, one thread per dx element (per element
// and kernel row in the atomic mode). The permuted modes draw their order once per call (one
// thread) into scratch.

#include <type_traits>

#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_dgrad_tiled_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/linear_bodies.h"

namespace dt::kernels::cuda {

namespace {

/// The most leaf bytes conv.wgrad's two phases hold at once (output channels are done in slices):
/// ResNet-18's 512x512x3x3 at batch 128 holds 1.2 GB of per-sample leaves in all.
constexpr std::size_t kWgradLeafBytes = std::size_t{256} << 20;
/// The most bytes of conv.dgrad's per-tap values held at once (samples are done in slices):
/// 9 values per dx element of a 3x3 layer.
constexpr std::size_t kDgradTapBytes = std::size_t{256} << 20;

/// Scratch for the tiled values of a backward launcher, done in slices: `slice` units (samples,
/// output channels) of `unit_floats` values each, as many as fit `max_bytes` (at least one),
/// followed by the permutation of `order_n` items drawn on the device when `spec` is permuted
/// (else order is null). values is null when out of memory (recorded).
struct SlicedScratch {
    float* values = nullptr;
    const uint32_t* order = nullptr;
    int64_t slice = 0;
};
SlicedScratch sliced_scratch(int64_t unit_floats, int64_t units, std::size_t max_bytes,
                             const common::AccumSpec& spec, int64_t order_n) {
    SlicedScratch out;
    const int64_t cap =
        unit_floats > 0 ? static_cast<int64_t>(max_bytes / sizeof(float)) / unit_floats : units;
    out.slice = cap < 1 ? 1 : cap < units ? cap : units;
    const std::size_t bytes =
        (sizeof(float) * static_cast<std::size_t>(out.slice * unit_floats) + 255) / 256 * 256;
    char* s =
        static_cast<char*>(scratch(bytes + sizeof(uint32_t) * static_cast<std::size_t>(order_n)));
    if (s == nullptr) return out;
    out.values = reinterpret_cast<float*>(s);
    if (spec.mode == common::AccumMode::kPermuted) {
        auto* order = reinterpret_cast<uint32_t*>(s + bytes);
        permutation_into(order, order_n, spec.permute_key);
        out.order = order;
    }
    return out;
}

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
/// Whether `Kernel` may have `bytes` of dynamic shared memory a block: past the 48 KiB every
/// block has, a kernel is allowed it once per process (and the SM's carveout made mostly shared
/// memory, so that two large blocks fit), if the device has that much (the large tile's cut
/// programs: conv.dgrad's exact cut, conv.wgrad's exact fold).
template <auto Kernel>
bool dynamic_shared_ok(std::size_t bytes) {
    if (bytes <= std::size_t{48} << 10) return true;
    static const bool ok = [bytes] {
        if (device_block_shared_optin() < bytes) return false;
        const bool set = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(bytes)) == cudaSuccess &&
                         cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                              cudaSharedmemCarveoutMaxShared) == cudaSuccess;
        cudaGetLastError();  // not sticky: a refusal leaves the small tile, not an error
        return set;
    }();
    return ok;
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
}
template <class S>
__global__ void __launch_bounds__(S::kThreads, S::kMinBlocks)
    dgrad_atomic_split_kernel(const float* dy, const float* w, float* dx, Conv2dParams p,
                              DgradDivisors d) {
    __shared__ __align__(16) float shared[S::kShared];
    conv_dgrad_atomic_split_block<S>(GridPos::here(), shared, DeviceSync{}, dy, w, dx, p, d);
}
__global__ void wgrad_kernel(const float* x, const float* dy, float* dw, const uint32_t* order,
                             Conv2dParams p) {
    conv2d_wgrad_body(GridPos::here(), x, dy, dw, order, p);
}
__global__ void wgrad_combine_kernel(const float* leaves, const uint32_t* order, float* dw,
                                     Conv2dParams p, int64_t e0, int64_t len) {
    conv2d_wgrad_combine_body(GridPos::here(), leaves, order, dw, p, e0, len);
}
template <class S, class Out>
__global__ void __launch_bounds__(S::kThreads, S::kMinBlocks)
    wgrad_tiled_kernel(const float* x, const float* dy, Conv2dParams p, int64_t G, int64_t o_lo,
                       int64_t o_hi, Out out) {
    __shared__ __align__(16) float shared[S::kShared];
    conv_wgrad_tiled_block<S>(GridPos::here(), shared, DeviceSync{}, x, dy, p, G, o_lo, o_hi, out);
}

/// conv.wgrad's chains over groups of G samples for the channels [o_lo, o_hi), tiled, to `out`.
template <class Out>
void wgrad_tiled(const char* name, const float* x, const float* dy, const Conv2dParams& p,
                 int64_t G, int64_t o_lo, int64_t o_hi, const Out& out) {
    const auto blocks_of = [&](auto s) {
        return (p.n + G - 1) / G * conv_wgrad_tiles<decltype(s)>(p, o_lo, o_hi);
    };
    with_tile_shape(blocks_of, [&](auto shape) {
        using S = decltype(shape);
        const int64_t blocks = blocks_of(shape);
        if (blocks <= 0) return;
        wgrad_tiled_kernel<S, Out><<<static_cast<unsigned>(blocks), S::kThreads, 0, stream()>>>(
            x, dy, p, G, o_lo, o_hi, out);
    });
    check_launch(name);
}
template <class S>
__global__ void __launch_bounds__(S::kThreads, kCutMinBlocks<S>)
    wgrad_sample_leaves_kernel(const float* x, const float* dy, Conv2dParams p, int64_t B,
                               int64_t o_lo, int64_t o_hi, WgradLeafOut out) {
    __shared__ __align__(16) float shared[S::kShared];
    conv_wgrad_sample_leaves_block<S>(GridPos::here(), shared, DeviceSync{}, x, dy, p, B, o_lo,
                                      o_hi, out);
}

/// conv.wgrad's per-sample leaves of the channels [o_lo, o_hi) into `out`, tiled, B samples a
/// block (wgrad_leaf_block_samples): cut chains where B > 1, else each block one sample's plain
/// chains (the large tile at three blocks a SM, not two).
void wgrad_sample_leaves(const float* x, const float* dy, const Conv2dParams& p, int64_t o_lo,
                         int64_t o_hi, const WgradLeafOut& out) {
    const int sms = device_multiprocessors();
    const auto samples_of = [&](auto s) {
        using S = decltype(s);
        return wgrad_leaf_block_samples(p.n, p.ho * p.wo, conv_wgrad_tiles<S>(p, o_lo, o_hi), sms,
                                        kCutMinBlocks<S>);
    };
    const auto blocks_at = [&](auto s, int64_t B) {
        return (p.n + B - 1) / B * conv_wgrad_tiles<decltype(s)>(p, o_lo, o_hi);
    };
    // The tile choice with the small tile's samples a block: block counts that differ by the
    // tiles alone.
    const int64_t choice_b = samples_of(SmallTile{});
    const auto blocks_of = [&](auto s) { return blocks_at(s, choice_b); };
    with_tile_shape(blocks_of, [&](auto shape) {
        using S = decltype(shape);
        const int64_t B = samples_of(shape);
        const auto blocks = static_cast<unsigned>(blocks_at(shape, B));
        if (B == 1)
            wgrad_tiled_kernel<S, WgradLeafOut>
                <<<blocks, S::kThreads, 0, stream()>>>(x, dy, p, 1, o_lo, o_hi, out);
        else
            wgrad_sample_leaves_kernel<S>
                <<<blocks, S::kThreads, 0, stream()>>>(x, dy, p, B, o_lo, o_hi, out);
    });
    check_launch("conv2d_backward_weight (leaves)");
}
template <class S>
__global__ void __launch_bounds__(S::kThreads, kCutMinBlocks<S>)
    wgrad_exact_fold_kernel(const float* x, const float* dy, Conv2dParams p, int64_t G,
                            common::ExactAcc* accs) {
    extern __shared__ __align__(16) float shared[];  // kWgradFoldShared<S> floats
    conv_wgrad_exact_fold_block<S>(GridPos::here(), shared, DeviceSync{}, x, dy, p, G, accs);
}
/// conv.wgrad's exact fold with shape S: the large tile's 108 KiB of shared memory a block where
/// the device gives it (dynamic_shared_ok), else the small tile.
template <class S>
void launch_exact_fold(const float* x, const float* dy, const Conv2dParams& p,
                       common::ExactAcc* accs) {
    const std::size_t bytes = sizeof(float) * kWgradFoldShared<S>;
    if constexpr (!std::is_same_v<S, SmallTile>) {
        if (!dynamic_shared_ok<wgrad_exact_fold_kernel<S>>(bytes)) {
            launch_exact_fold<SmallTile>(x, dy, p, accs);
            return;
        }
    }
    const int64_t tiles = conv_wgrad_tiles<S>(p, 0, p.co);
    const int64_t G = wgrad_fold_group(p.n, tiles, device_multiprocessors(), kCutMinBlocks<S>);
    wgrad_exact_fold_kernel<S>
        <<<static_cast<unsigned>((p.n + G - 1) / G * tiles), S::kThreads, bytes, stream()>>>(
            x, dy, p, G, accs);
}
__global__ void wgrad_exact_round_kernel(const common::ExactAcc* accs, float* dw, int64_t n) {
    conv2d_wgrad_exact_round_body(GridPos::here(), accs, dw, n);
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
    check_launch("conv2d_backward_data (exact, cut per tap)");
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

void conv2d_backward_weight(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const int64_t n = p.co * p.ci * p.kh * p.kw;
    if (n <= 0) return;
    if (p.n <= 0 && p.exact_out != nullptr) return;  // a part without samples adds nothing
    if (p.accum.mode == common::AccumMode::kExact &&
        exact_wgrad_way() == ExactWgradWay::kLimbAtomics) {
        conv2d_backward_weight_exact_limbs(x, dy, dw, p);  // the same bits, no leaves
        return;
    }
    if (p.accum.mode == common::AccumMode::kAtomic || p.n <= 0) {  // (no samples: dw = +0)
        cudaMemsetAsync(dw, 0, sizeof(float) * static_cast<std::size_t>(n), stream());
        wgrad_tiled("conv2d_backward_weight (atomic)", x, dy, p, kConv2dAtomicGroup, 0, p.co,
                    WgradAtomicOut{dw});
        return;
    }
    // The leaves of slices of output channels whose leaves fit kWgradLeafBytes, then their
    // combination; the sample permutation (permuted) drawn once.
    const int64_t R = p.ci * p.kh * p.kw;
    const SlicedScratch sc =
        sliced_scratch(conv_wgrad_leaf_count(p) * R, p.co, kWgradLeafBytes, p.accum, p.n);
    if (sc.values == nullptr) return;  // recorded; the engine's next check reports it
    const int64_t slice = sc.slice;    // output channels
    for (int64_t o_lo = 0; o_lo < p.co; o_lo += slice) {
        const int64_t o_hi = p.co - o_lo < slice ? p.co : o_lo + slice, len = (o_hi - o_lo) * R;
        const WgradLeafOut leaves{sc.values, o_lo * R, len};
        const int64_t G = conv_wgrad_leaf_group(p);
        if (G == 1)  // per-sample leaves: several samples a block, cut
            wgrad_sample_leaves(x, dy, p, o_lo, o_hi, leaves);
        else
            wgrad_tiled("conv2d_backward_weight (leaves)", x, dy, p, G, o_lo, o_hi, leaves);
        launch_elementwise("conv2d_backward_weight (combine)", wgrad_combine_kernel, len,
                           static_cast<const float*>(sc.values), sc.order, dw, p, o_lo * R, len);
    }
}

void conv2d_backward_weight_per_element(const float* x, const float* dy, float* dw,
                                        const Conv2dParams& p) {
    const int64_t n = p.co * p.ci * p.kh * p.kw;
    if (n <= 0) return;
    if (p.accum.mode == common::AccumMode::kAtomic) {
        conv2d_backward_weight(x, dy, dw, p);
        return;
    }
    const uint32_t* order = permuted_order(p.accum, p.n);
    launch_elementwise("conv2d_backward_weight (per element)", wgrad_kernel, n, x, dy, dw, order,
                       p);
}

void conv2d_backward_weight_exact_limbs(const float* x, const float* dy, float* dw,
                                        const Conv2dParams& p) {
    const int64_t n = p.co * p.ci * p.kh * p.kw;
    if (n <= 0) return;
    common::ExactAcc* accs = p.exact_out;  // a split batch's part: add into its accumulators
    if (accs == nullptr) {
        const std::size_t bytes = sizeof(common::ExactAcc) * static_cast<std::size_t>(n);
        accs = static_cast<common::ExactAcc*>(scratch(bytes));
        if (accs == nullptr) return;  // recorded; the engine's next check reports it
        cudaMemsetAsync(accs, 0, bytes, stream());  // all-zero limbs and flags: exact_init
    }
    if (p.n > 0) {
        // The tile choice compares the shapes' blocks with the small tile's groups, so that the
        // counts differ by the tiles alone (launch_exact_fold then groups for its shape's waves).
        const int64_t G = wgrad_fold_group(p.n, conv_wgrad_tiles<SmallTile>(p, 0, p.co),
                                           device_multiprocessors(), kCutMinBlocks<SmallTile>);
        const auto blocks_of = [&](auto s) {
            return (p.n + G - 1) / G * conv_wgrad_tiles<decltype(s)>(p, 0, p.co);
        };
        with_tile_shape(blocks_of,
                        [&](auto shape) { launch_exact_fold<decltype(shape)>(x, dy, p, accs); });
        check_launch("conv2d_backward_weight (exact, limb atomics)");
    }
    if (p.exact_out == nullptr)
        launch_elementwise("conv2d_backward_weight (exact, rounding)", wgrad_exact_round_kernel, n,
                           static_cast<const common::ExactAcc*>(accs), dw, n);
}

}  // namespace dt::kernels::cuda
