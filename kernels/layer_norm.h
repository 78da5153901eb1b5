// SPDX-License-Identifier: MIT
// Contract of the layer-normalisation kernels (GPT-2's, over the last dimension). x, y, dy, dx
// are (M, C): M = B * T tokens, B sequences of T tokens each, C features contiguous; gamma, beta,
// dgamma, dbeta are (C); mean and rstd are (M), saved by the forward for the backward.
//
// Numeric recipe. R(term) is a token's row sum of term(i) over its features i < C (site
// ln.stats in the forward, ln.grad in the backward); G(term) a feature's sum over all M tokens
// (site ln.grad). Every other step is the elementwise formula written, each operation rounded
// once in the order written (no fma anywhere, -ffp-contract=off); count = C as float:
//   mean  = R(x) / count                    var = R((x - mean) * (x - mean)) / count (biased)
//   rstd  = 1 / sqrt(var + eps)             (sqrt and division correctly rounded)
//   xhat  = (x - mean) * rstd               y = (xhat * gamma) + beta
// Backward, xhat recomputed from the saved mean and rstd (the forward's bits):
//   g     = dy * gamma                      m1 = R(g) / count,  m2 = R(g * xhat) / count
//   dx    = rstd * ((g - m1) - (xhat * m2))
//   dbeta = G(dy)                           dgamma = G(dy * xhat)
// Accumulation modes (the AccumSpec `accum`, one per call: ln.stats for the forward's two row
// sums, ln.grad for all four sums of the backward).
// R, the row sums. Leaf j < L = min(C, 32) is the strided chunk of features j, j + 32, j + 64,
// ... of the row (a GPU warp's lane j reads them, coalesced):
//   kTree      leaf(j) = +0 + term(j) + term(j + 32) + ... in index order                // ORDER
//              R = T(leaf(0), ..., leaf(L - 1))     (reduce_tree.h's left-complete tree)
//   kKahan     leaf(j) = kahan_add of term(j), term(j + 32), ... from (+0, +0); R = kahan_value
//              of T_k(leaf(0), ..., leaf(L - 1)), T_k the same tree with kahan_merge
//   kExact     R = the exact sum of the C terms rounded once (exact_sum_of, accum_exact_short.h)
//   kPermuted  R = +0 + leaf(o[0]) + leaf(o[1]) + ..., leaves as kTree,
//              o = permute_order(L, accum.permute_key): one order for every row and sum
//   kAtomic    as kTree. A row belongs to one thread (cpu) or one warp (cuda), so no two
//              threads add into one row sum: nothing races, the bits are tree's
// G, the sums over tokens (ln.grad's cross-sample site). Leaf(b, c) is sequence b's sum of its
// tokens t = 0 .. T-1 in ascending order from +0 (feature c of token m = b * T + t):
//   kTree      G(c) = T(leaf(0, c), ..., leaf(B - 1, c))                                   // ORDER
//   kKahan     kahan leaves over t ascending from (+0, +0), combined by T_k, then kahan_value
//   kExact     G(c) = the exact sum of all M terms rounded once (ExactAcc): independent of
//              order, so permuting the sequences changes no bit of dgamma or dbeta. A part of
//              a split batch (p.exact_dgamma / p.exact_dbeta set) adds its unrounded G(c) to
//              those accumulators instead and leaves that output unwritten: the parts' merged
//              sums, rounded once, are the whole batch's bits
//   kPermuted  G(c) = +0 + leaf(pi[0], c) + leaf(pi[1], c) + ..., pi = permute_order(B, key):
//              the same key as R's order, drawn over B items
//   kAtomic    each leaf atomic-added into the zeroed G(c) (atomic_add.h): nondeterministic with
//              2+ threads (the CPU's leaves are parallel from M * C >= 32768 elements)
// Only R and G change with the mode; the terms and every elementwise formula are the same in
// all modes. R of a token never depends on M or on other tokens (batch invariance).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/hd.h"

namespace dt::kernels {

struct LayerNormParams {
    int64_t M = 0, C = 0;  // x is (M, C)
    int64_t T = 1;         // tokens per sequence: M = B * T (M % T == 0, T >= 1)
    float eps = 1e-5f;
    // ln.stats (layer_norm_forward) or ln.grad (layer_norm_backward), one spec per call.
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);
    // ln.grad in the exact mode only (ignored in the others): where set, this part's unrounded
    // G(dy * xhat) and G(dy) are ADDED to exact_dgamma[c] and exact_dbeta[c] (layout of dgamma
    // and dbeta, initialised by the caller; at most B = M / T units per element and call), and
    // dgamma or dbeta is not written (it may then be null). Each pointer on its own: a frozen
    // gamma or beta keeps its float output. A part of a split batch (engine/runtime/batch_split.h);
    // on cuda, device memory.
    common::ExactAcc* exact_dgamma = nullptr;
    common::ExactAcc* exact_dbeta = nullptr;
};

/// The row sums' leaves: lane j of a row folds features j, j + 32, ... (the header comment).
inline constexpr int64_t kLayerNormLeaves = 32;

/// L: the leaves of a row of C features.
DT_HD int64_t layer_norm_leaves(int64_t C) { return C < kLayerNormLeaves ? C : kLayerNormLeaves; }

// ---- the recipe's elementwise pieces, host-device: what cpu:: and cuda:: both run ----

/// ORDER: 1 / sqrt(var + eps), each operation correctly rounded.
DT_HD float layer_norm_rstd(float var, float eps) { return 1.0f / sqrtf(var + eps); }

/// ORDER: (x - mean) * rstd.
DT_HD float layer_norm_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }

/// ORDER: (xhat * gamma) + beta.
DT_HD float layer_norm_y(float xhat, float gamma, float beta) { return xhat * gamma + beta; }

/// ORDER: rstd * ((g - m1) - (xhat * m2)), g = dy * gamma.
DT_HD float layer_norm_dx(float g, float xhat, float m1, float m2, float rstd) {
    return rstd * ((g - m1) - xhat * m2);
}

namespace ref {
inline void layer_norm_forward(const double* x, const double* gamma, const double* beta, double* y,
                               double* mean, double* rstd, const LayerNormParams& p);
inline void layer_norm_backward(const double* dy, const double* x, const double* mean,
                                const double* rstd, const double* gamma, double* dx, double* dgamma,
                                double* dbeta, const LayerNormParams& p);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/layer_norm.cpp) and cuda::
// (kernels/cuda/layer_norm.cu: device pointers, the engine's stream).
//   layer_norm_forward   y, and each token's mean and rstd (site ln.stats).
//   layer_norm_backward  dx, dgamma, dbeta from the forward's mean and rstd (site ln.grad);
//                        in exact, dgamma or dbeta not written where exact_dgamma/dbeta is set.
#define DT_LAYER_NORM_KERNELS                                                                 \
    void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,  \
                            float* mean, float* rstd, const LayerNormParams& p);              \
    void layer_norm_backward(const float* dy, const float* x, const float* mean,              \
                             const float* rstd, const float* gamma, float* dx, float* dgamma, \
                             float* dbeta, const LayerNormParams& p);

namespace cpu {
DT_LAYER_NORM_KERNELS
}  // namespace cpu

namespace cuda {
DT_LAYER_NORM_KERNELS
}  // namespace cuda

#undef DT_LAYER_NORM_KERNELS

}  // namespace dt::kernels
