// SPDX-License-Identifier: MIT
// Contract of the linear kernels: y = x w^T + b with x (N, I), w (O, I) (PyTorch layout),
// b (O) or null, y (N, O).
// Numeric recipes (the CPU kernels; ref:: computes the same sums in double):
// - forward: ORDER: y[s,o] = (fma chain from +0 over i ascending of x[s,i] * w[o,i]) + b[o]
//   (gemm_f32_k_fma with B = W^T, then one bias add).
// - linear.dgrad: no cross-sample reduction; the mode (p.accum) governs the sum over o of the
//   terms dy[s,o] * w[o,i] for each dx[s,i]:
//   tree      ORDER: acc = +0, then acc = fma(dy[s,o], w[o,i], acc) for o ascending (one GEMM,
//             gemm_f32_k_fma).
//   kahan     kahan_add of the float products (each rounded) over o ascending from (+0,+0),
//             then kahan_value.
//   exact     the exact sum of the O float products (each rounded) rounded once (ExactAcc).
//   permuted  ORDER: the fma chain of tree over o = pi[0], pi[1], ...,
//             pi = permute_order(O, accum.permute_key) (one order for the whole call).
//   atomic    dx zeroed; O is cut into fixed chunks of kLinearAtomicChunk features; items
//             (block of 32 rows, chunk) run round-robin over the threads, each a sequential
//             GEMM partial (the fma chain over the chunk, o ascending) atomic-added into dx
//             (atomic_add.h). With 3+ chunks (O > 8) the order is up to thread timing.
// - linear.wgrad: leaf_s[o,i] = dy[s,o] * x[s,i] (a sample contributes one float product, the
//   same in every mode); the mode (p.accum) governs the combination over s = 0..N-1:
//   tree      ORDER: left-complete tree (kernels/common/reduce_tree.h) in sample order.
//   kahan     the same tree with kahan_merge over (leaf, +0) pairs, then kahan_value.
//   exact     the exact sum of the N float products rounded once (ExactAcc per element):
//             "exact across samples" (each product keeps its one rounding), so the result
//             depends only on the multiset of samples.
//   permuted  ORDER: +0 + leaf_pi[0] + leaf_pi[1] + ..., pi = permute_order(N, accum.permute_key).
//   atomic    split-K over samples: groups of kLinearAtomicGroup consecutive samples run
//             across threads; a group's partial of an element is +0 + the group's products in
//             sample order, atomic-added into the zeroed dw: the order of the N / G partials of
//             an element is whatever thread timing gives (two partials commute, so N <= G and
//             G < N <= 2G are deterministic). The CPU adds a group's partials a block of dw rows
//             at a time under the block's lock; CUDA adds each element with atomicAdd.
// - bias.grad: the bias_add_backward kernel (kernels/bias_add.h) with C = O, P = 1.
// Except in the atomic mode, threads own output rows/blocks or (row, column-chunk) pieces of dw;
// no result depends on the thread count or the ISA path.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct LinearParams {
    int64_t n = 0, in = 0, out = 0;
    // Accumulation of the site being computed (linear.dgrad or linear.wgrad); see above.
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);
    // linear.wgrad in the exact mode only: when set, every element's unrounded sum is ADDED to
    // exact_out[i] (layout of dw, initialised by the caller; at most N units per element) and
    // dw is not written: the batch is one part of a larger one whose sum is rounded once at the
    // end (engine/runtime/batch_split.h). On cuda, exact_out is device memory.
    common::ExactAcc* exact_out = nullptr;
};

/// Output features per atomic partial of linear.dgrad (fixed: independent of the thread count).
constexpr int64_t kLinearAtomicChunk = 4;
/// Samples per atomic partial of linear.wgrad (fixed; see kConv2dAtomicGroup in conv2d.h).
constexpr int64_t kLinearAtomicGroup = 16;

namespace ref {
inline void linear_forward(const double* x, const double* w, const double* b, double* y,
                           const LinearParams& p);
inline void linear_backward_data(const double* dy, const double* w, double* dx,
                                 const LinearParams& p);
inline void linear_backward_weight(const double* x, const double* dy, double* dw,
                                   const LinearParams& p);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/linear.cpp) and cuda::
// (kernels/cuda/linear.cu: device pointers, the engine's stream).
//   linear_forward          x (N, I), w (O, I), b (O) or nullptr -> y (N, O).
//   linear_backward_data    linear.dgrad: dy (N, O), w (O, I) -> dx (N, I), overwritten.
//   linear_backward_weight  linear.wgrad: x (N, I), dy (N, O) -> dw (O, I), overwritten.
#define DT_LINEAR_KERNELS                                                                         \
    void linear_forward(const float* x, const float* w, const float* b, float* y,                 \
                        const LinearParams& p);                                                   \
    void linear_backward_data(const float* dy, const float* w, float* dx, const LinearParams& p); \
    void linear_backward_weight(const float* x, const float* dy, float* dw, const LinearParams& p);

namespace cpu {
DT_LINEAR_KERNELS
}  // namespace cpu

namespace cuda {
DT_LINEAR_KERNELS
}  // namespace cuda

#undef DT_LINEAR_KERNELS

}  // namespace dt::kernels
