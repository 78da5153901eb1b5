// SPDX-License-Identifier: MIT
// conv2d's wgrad on the GPU (forward and dgrad: conv2d.cu): the launchers on the engine's stream
// of the tiled block programs of conv2d_tiled_bodies.h (the group chains, atomic-added in the
// atomic mode, else stored as leaves and combined per element by conv2d_bodies.h; the exact
// mode's fold into limb accumulators with integer atomics, DT_CUDA_EXACT_WGRAD=limbs) and of
// conv2d_bodies.h's per-thread sums. The permuted mode draws its order once per call (one
// thread) into scratch.

#include <type_traits>

#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

namespace {

/// The most leaf bytes conv.wgrad's two phases hold at once (output channels are done in slices):
/// ResNet-18's 512x512x3x3 at batch 128 holds 1.2 GB of per-sample leaves in all.
constexpr std::size_t kWgradLeafBytes = std::size_t{256} << 20;

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
    check_launch(by_tile<S>("conv2d_backward_weight (exact, limb atomics, small tile)",
                            "conv2d_backward_weight (exact, limb atomics, large tile)",
                            "conv2d_backward_weight (exact, limb atomics, tiny tile)"));
}
__global__ void wgrad_exact_round_kernel(const common::ExactAcc* accs, float* dw, int64_t n) {
    conv2d_wgrad_exact_round_body(GridPos::here(), accs, dw, n);
}

}  // namespace

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
    }
    if (p.exact_out == nullptr)
        launch_elementwise("conv2d_backward_weight (exact, rounding)", wgrad_exact_round_kernel, n,
                           static_cast<const common::ExactAcc*>(accs), dw, n);
}

}  // namespace dt::kernels::cuda
