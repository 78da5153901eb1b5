// SPDX-License-Identifier: MIT
// Contract of the conv2d kernels (cross-correlation, PyTorch's conv2d), NCHW:
//   x (N, Ci, H, W), w (Co, Ci, Kh, Kw), b (Co) or null, y (N, Co, Ho, Wo),
//   Ho = (H + 2 pad - Kh) / stride + 1, Wo likewise; zero padding on every side.
// Index names: R = Ci*Kh*Kw (taps, r = (ci*Kh + ki)*Kw + kj), P = Ho*Wo (positions,
// p = oh*Wo + ow), input row ih = oh*stride - pad + ki, column iw = ow*stride - pad + kj.
//
// Numeric recipes (the CPU kernels; ref:: computes the same sums in double):
// Live taps: tap (ki, kj) is live when it reads the image (not the padding) at some output
// position; a dead tap reads only padding (wide kernels on small maps: on a 1x1 map with k = 7
// and pad 3, 48 of 49 taps), so its terms w * (+0) are left out of every sum below and its rows
// of dw are +0 (the value the terms dy * (+0) sum to for finite dy; for finite w, leaving
// w * (+0) out of the forward sum changes nothing either, except -0 vs +0 for a sum that
// underflowed to -0 and would have met a dead tap next).
// - forward:  ORDER: y[s,o,p] = (fma chain from +0 over the live r ascending of
//             w[o,r] * xpad[s,r,p]) + b[o]
//             (gemm_f32_k_fma over r, padded positions of live taps contribute +-0, then one
//             bias add).
// - conv.dgrad: no cross-sample reduction. The per-tap value
//             t[s,c,ki,kj,oh,ow] = the fma chain from +0 over o ascending of
//             w[o,c,ki,kj] * dy[s,o,oh,ow]
//             (per-sample GEMM W^T dY, gemm_f32_k_fma) is the same in every mode; the
//             mode (p.accum) governs how col2im accumulates the taps (ki,kj) whose output
//             position (oh,ow) exists into dx[s,c,ih,iw]:
//   tree      ORDER: +0 + t(tap 0) + t(tap 1) + ..., taps (ki,kj) ascending; except on the
//             shapes of conv2d_dgrad_is_forward (stride 1, Kh == Kw = K, pad < K: every 3x3
//             'same' layer), where no t is rounded on its own: dx is the forward recipe of the
//             transposed convolution (dy padded by K-1-pad, weights w'[c,o,K-1-ki,K-1-kj] =
//             w[o,c,ki,kj]), ORDER: dx[s,c,ih,iw] = the fma chain from +0 over o ascending, then
//             taps (ki,kj) descending, of w[o,c,ki,kj] * dy[s,o,ih+pad-ki,iw+pad-kj] (terms
//             whose position (oh,ow) does not exist are +-0 products, or left out for dead taps
//             of the transposed convolution, as in forward). One rounding chain of Co*K*K terms
//             instead of K*K chains of Co and a K*K-term sum; no column buffer, no col2im.
//   kahan     kahan_add of the taps ascending from (+0,+0), then kahan_value (accum_kahan.h).
//   exact     the exact sum of the t's rounded once (ExactAcc per element, accum_exact.h).
//   permuted  ORDER: +0 + t(pi[0]) + t(pi[1]) + ..., pi = permute_order(Kh*Kw, accum.permute_key)
//             over tap indices ki*Kw + kj: one order for every element and sample of the call.
//   atomic    dx zeroed; work items (sample, kernel row ki) are spread round-robin over the
//             threads; an item computes the t of its Kw taps (a GEMM of that row's weights,
//             same t bits), sums them per element in tap order (+0 + t(ki,0) + t(ki,1) + ...)
//             and atomic-adds that row partial into dx (atomic_add.h). The order of an
//             element's Kh row partials is whatever thread timing gives: nondeterministic with
//             2+ threads when Kh >= 3 (two partials commute: +0 + a + b == +0 + b + a; a 1x1
//             kernel has one tap per element: tree's bits).
// - conv.wgrad: leaf_s[o,r] = the fma chain from +0 over p ascending of dy[s,o,p] * xpad[s,r,p]
//             for live r (dead r: dw = +0) (a float GEMM output per sample, the same bits in
//             every mode); the mode
//             (p.accum) governs the combination of the leaves over s = 0..N-1:
//   tree      the batch is cut into fixed groups of conv2d_tree_group(P) consecutive samples; a
//             group's leaf is one sum continued over its samples in order (+0 + leaf_s0's
//             products + leaf_s1's ... = the float GEMM over (sample, p) with K ascending);
//             ORDER: the N / G group leaves combine by the left-complete tree
//             (kernels/common/reduce_tree.h) in group order. Independent of the thread count.
//   kahan     the same tree with kahan_merge over (leaf, +0) pairs (kahan_tree_push/finish),
//             then kahan_value. The leaves themselves are the plain float GEMM outputs.
//   exact     the exact sum of the N leaves rounded once (ExactAcc per element). "Exact across
//             samples": each leaf keeps its fixed-order float rounding, so the result depends
//             only on the multiset of samples (invariant to their order in the batch and to
//             any partition or thread count), not on the exact real sum of all products.
//   permuted  ORDER: +0 + leaf_pi[0] + leaf_pi[1] + ..., pi = permute_order(N, accum.permute_key).
//   atomic    split-K over samples: the batch is cut into fixed groups of kConv2dAtomicGroup
//             consecutive samples; a thread computes a group's partial as one GEMM sum continued
//             over the group's samples in order (+0 + leaf_s0's products + leaf_s1's ...) and
//             atomic-adds it element by element into a zeroed shared buffer (atomic_add.h):
//             the order of the N / G partials is whatever thread timing gives.
// - bias.grad: the bias_add_backward kernel (kernels/bias_add.h) with C = Co, P = Ho*Wo.
// Except in the atomic mode, threads own samples (forward, dgrad, wgrad leaves) or element slices
// (cross-sample combination); no result depends on the thread count or the ISA path
// (kernels/gemm.h).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/hd.h"

namespace dt::kernels {

struct Conv2dParams {
    int64_t n = 0, ci = 0, h = 0, w = 0;  // input
    int64_t co = 0, kh = 0, kw = 0;       // weight
    int64_t stride = 1, pad = 0;
    int64_t ho = 0, wo = 0;               // output (callers compute them, see above)
    // Accumulation of the site being computed (conv.dgrad or conv.wgrad); see above.
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);
    // conv.wgrad in the exact mode only: when set, every element's unrounded sum is ADDED to
    // exact_out[i] (layout of dw, initialised by the caller; at most N units per element) and
    // dw is not written: the batch is one part of a larger one whose sum is rounded once at the
    // end (engine/runtime/batch_split.h). On cuda, exact_out is device memory.
    common::ExactAcc* exact_out = nullptr;
};

/// Samples per atomic partial of conv.wgrad (fixed: independent of the thread count). 1 would
/// make every sample's leaf its own atomic add, measured 2-6x slower than tree on SmallCNN and
/// MediumCNN shapes (an unfair baseline); 16 keeps 8 racing partials per element at batch 128
/// and 4 at batch 64 with 16x fewer atomic adds (bench/accum_sites_bench.cpp).
constexpr int64_t kConv2dAtomicGroup = 16;
/// Samples per leaf of the tree mode of conv.wgrad (part of its recipe: changing it changes bits):
/// the least power of two >= 16 with which a leaf chains at least kConv2dTreeLeafTerms products
/// per element (16 from P = 64 up; P = 1 at batch 128: one leaf, a plain GEMM over the batch).
/// A power of two, so that a power-of-two batch splits into a power-of-two number of leaves,
/// which threads share evenly (SmallCNN's 7x7 map: 4 leaves of 32, not 7 of 21). Shape-only: the
/// same for every thread count and ISA.
constexpr int64_t kConv2dTreeLeafTerms = 1024;
DT_HD constexpr int64_t conv2d_tree_group(int64_t positions) {
    const int64_t p = positions > 0 ? positions : 1;
    int64_t g = 16;
    while (g * p < kConv2dTreeLeafTerms) g *= 2;
    return g;
}

/// conv.dgrad tree takes the transposed-forward recipe (above) on these shapes.
DT_HD constexpr bool conv2d_dgrad_is_forward(const Conv2dParams& p) {
    return p.stride == 1 && p.kh == p.kw && p.pad >= 0 && p.pad < p.kh;
}

namespace ref {
inline void conv2d_forward(const double* x, const double* w, const double* b, double* y,
                           const Conv2dParams& p);
inline void conv2d_backward_data(const double* dy, const double* w, double* dx,
                                 const Conv2dParams& p);
inline void conv2d_backward_weight(const double* x, const double* dy, double* dw,
                                   const Conv2dParams& p);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/conv2d/) and cuda::
// (kernels/cuda/conv2d.cu for forward and dgrad, conv2d_wgrad.cu: device pointers, the engine's
// stream).
//   conv2d_forward          x (N,Ci,H,W), w (Co,Ci,Kh,Kw), b (Co) or nullptr -> y (N,Co,Ho,Wo).
//   conv2d_backward_data    conv.dgrad: dy (N,Co,Ho,Wo), w (Co,Ci,Kh,Kw) -> dx (N,Ci,H,W),
//                           overwritten.
//   conv2d_backward_weight  conv.wgrad: x (N,Ci,H,W), dy (N,Co,Ho,Wo) -> dw (Co,Ci,Kh,Kw),
//                           overwritten.
#define DT_CONV2D_KERNELS                                                                         \
    void conv2d_forward(const float* x, const float* w, const float* b, float* y,                 \
                        const Conv2dParams& p);                                                   \
    void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dParams& p); \
    void conv2d_backward_weight(const float* x, const float* dy, float* dw, const Conv2dParams& p);

namespace cpu {
DT_CONV2D_KERNELS
}  // namespace cpu

namespace cuda {
DT_CONV2D_KERNELS
/// conv.dgrad through its per-tap values in every mode (a tiled GEMM per tap into a buffer,
/// then each element's sum of them), as conv2d_backward_data computes the modes and shapes it
/// has no other way for (its exact and atomic modes on 3x3 'same' shapes are the transposed
/// forward cut per tap or split per kernel row; tree there is the transposed forward here too):
/// the exact mode's bits, timed against it by bench/gpu/gpu_kernel_bench.cpp.
void conv2d_backward_data_taps(const float* dy, const float* w, float* dx, const Conv2dParams& p);
/// conv.dgrad with one thread per dx element (per element and kernel row in the atomic mode)
/// computing its per-tap values where it needs them: conv2d_backward_data's bits (which
/// computes the values with a tiled GEMM per tap first), timed against it by
/// bench/gpu/gpu_kernel_bench.cpp.
void conv2d_backward_data_per_element(const float* dy, const float* w, float* dx,
                                      const Conv2dParams& p);
/// conv.wgrad with one thread per dw element computing all of its leaves (every mode but atomic,
/// which it forwards): conv2d_backward_weight's bits (whose threads compute one leaf each),
/// timed against it by bench/gpu/gpu_kernel_bench.cpp.
void conv2d_backward_weight_per_element(const float* x, const float* dy, float* dw,
                                        const Conv2dParams& p);
/// conv.wgrad's exact mode computed the atomic mode's way: the tiled program's per-sample
/// chains of a group of samples folded exactly per element in double, the doubles added into the
/// elements' accumulators with integer atomics on their limbs, then one rounding (into p.exact_out
/// instead, unrounded, for a split batch's part): the exact mode's bits without storing the leaves,
/// timed against the leaves' way by bench/gpu/gpu_kernel_bench.cpp.
void conv2d_backward_weight_exact_limbs(const float* x, const float* dy, float* dw,
                                        const Conv2dParams& p);
}  // namespace cuda

#undef DT_CONV2D_KERNELS

}  // namespace dt::kernels
