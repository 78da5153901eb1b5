// SPDX-License-Identifier: MIT
// Contract of the global gradient norm, for norm clipping (site grad.norm): the sum of the
// squares of every element of every gradient, then every gradient scaled when the norm exceeds a
// limit. The buffers are a list of (pointer, length); on cuda the pointers are device memory and
// the list itself is host memory.
//
// Leaves: each buffer is cut into chunks of kGradNormChunk elements (the last one partial); leaf l
// numbers them buffer by buffer, chunk by chunk (L leaves in all; an empty buffer has none). A
// square is x * x, rounded once.
//   kTree      leaf = +0 + sq[0] + sq[1] + ... over the chunk in index order           // ORDER
//              total = T(leaf_0, ..., leaf_{L-1})  (reduce_tree.h)                      // ORDER
//   kKahan     leaf = kahan_add of the chunk's squares from (+0, +0); total =
//              kahan_value(T_k(leaves)), T_k the same tree with kahan_merge (accum_kahan.h)
//   kExact     total = the exact sum of every square, rounded once (ExactAcc): independent of
//              chunks, buffers' order and threads
//   kPermuted  leaves as kTree; total = +0 + leaf_{o[0]} + leaf_{o[1]} + ...,
//              o = permute_order(L, accum.permute_key)                                  // ORDER
//   kAtomic    leaves as kTree, each atomic-added into the zeroed total as it is done: the order
//              is up to timing (a single leaf, or two, commute)
// No leaf (L = 0): total = +0.
// Clipping, per element, from the total in device memory (no wait for the host):
//   norm = sqrt(total) (correctly rounded); when norm > max_norm: g = g * (max_norm / norm)
//   (ORDER: the quotient rounded once, then the product); otherwise g is left as it is. A NaN
//   norm clips nothing (the non-finite scan reports such gradients); +inf scales every g by 0.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/hd.h"

namespace dt::kernels {

inline constexpr int64_t kGradNormChunk = 1024;

/// One gradient: n floats at g.
struct GradBuffer {
    float* g = nullptr;
    int64_t n = 0;
};

struct GradNormParams {
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);  // grad.norm
};

/// The leaves of a buffer of n elements.
DT_HD int64_t grad_norm_leaves(int64_t n) { return (n + kGradNormChunk - 1) / kGradNormChunk; }

/// The kTree leaf of chunk c of g (n elements): +0 + the squares in index order.
DT_HD float grad_norm_leaf(const float* g, int64_t n, int64_t c) {
    const int64_t lo = c * kGradNormChunk, hi = lo + kGradNormChunk < n ? lo + kGradNormChunk : n;
    float acc = 0.0f;
    for (int64_t i = lo; i < hi; ++i) acc = acc + g[i] * g[i];  // ORDER: the chunk's chain
    return acc;
}

/// Chunk c's squares added exactly into a normalised accumulator (the kExact leaf; any chunking
/// gives the same total).
DT_HD common::ExactAcc grad_norm_exact_leaf(const float* g, int64_t n, int64_t c) {
    const int64_t lo = c * kGradNormChunk, hi = lo + kGradNormChunk < n ? lo + kGradNormChunk : n;
    common::ExactAcc a;
    common::exact_init(a);
    for (int64_t i = lo; i < hi; ++i) common::exact_add(a, g[i] * g[i]);
    common::exact_normalise(a);
    return a;
}

/// g * (max_norm / norm) when norm = sqrt(total) exceeds max_norm, else g (recipe above; sqrtf
/// is correctly rounded on every backend).
DT_HD float grad_clip_element(float g, float total, float max_norm) {
    const float norm = sqrtf(total);
    return norm > max_norm ? g * (max_norm / norm) : g;
}

namespace ref {
inline double grad_norm_sq(const double* const* g, const int64_t* n, int64_t count);
}  // namespace ref

namespace cpu {
/// total[0] = the sum of squares of b[0 .. count) by p.accum (recipe above).
void grad_norm_sq_each(const GradBuffer* b, int64_t count, float* total, const GradNormParams& p);
/// Every element of b[0 .. count) clipped by total[0] and max_norm (recipe above).
void grad_clip_each(const GradBuffer* b, int64_t count, const float* total, float max_norm);
}  // namespace cpu

namespace cuda {  // kernels/cuda/grad_norm.cu (device pointers, host list; the engine's stream)
void grad_norm_sq_each(const GradBuffer* b, int64_t count, float* total, const GradNormParams& p);
void grad_clip_each(const GradBuffer* b, int64_t count, const float* total, float max_norm);
}  // namespace cuda

}  // namespace dt::kernels
