// SPDX-License-Identifier: MIT
// Contract of the bias_add kernels: y[s, c, q] = x[s, c, q] + b[c] for x viewed as (N, C, P)
// (P = product of the trailing dimensions, 1 for a (N, C) matrix).
// Numeric recipes:
// - forward: one add per element, no reduction (bitwise identical everywhere).
// - bias.grad, by accumulation mode (p.accum). A sample's leaf is its per-channel sum over the
//   positions; the mode governs the leaf and the combination over samples s = 0..N-1:
//   tree      leaf_s[c] = +0 + dy[s,c,0] + dy[s,c,1] + ... (positions ascending);
//             ORDER: db[c] = left-complete tree (kernels/common/reduce_tree.h) of the leaves.
//   kahan     leaf_s[c] = kahan_add of dy[s,c,q], q ascending, from (+0,+0) (a KahanSum);
//             leaves combined by the same tree with kahan_merge; db[c] = kahan_value.
//   exact     db[c] = the exact sum of all N*P elements dy[s,c,q], rounded once (one ExactAcc
//             per channel, accum_exact.h): fully exact, independent of sample order, positions
//             order, partition and thread count.
//   permuted  the tree mode's leaves; ORDER: db[c] = +0 + leaf_pi[0] + leaf_pi[1] + ...,
//             pi = permute_order(N, accum.permute_key) (one order for every channel).
//   atomic    split-K over samples: the batch is cut into fixed groups of kBiasAddAtomicGroup
//             consecutive samples; a thread sums a group per channel sequentially (+0, samples
//             in order, positions ascending) and atomic-adds the partial into the zeroed db[c]
//             (atomic_add.h): the order of the N / G partials is whatever thread timing gives.
//             The GPU splits finer (kernels/cuda/bias_grad.cu): a partial per (sample, channel)
//             row, +0 and positions ascending, N partials per channel in timing order.
//   Shared by bias_add, conv2d and linear (all three report the bias.grad site).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct BiasAddParams {
    int64_t n = 0, c = 0, p = 1;
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);  // bias.grad
    // bias.grad in the exact mode only: when set, every element's unrounded sum is ADDED to
    // exact_out[i] (layout of db, initialised by the caller; at most N units per element) and
    // db is not written: the batch is one part of a larger one whose sum is rounded once at the
    // end (engine/runtime/batch_split.h). On cuda, exact_out is device memory.
    common::ExactAcc* exact_out = nullptr;
};

/// Samples per atomic partial of bias.grad (fixed; see kConv2dAtomicGroup in conv2d.h).
constexpr int64_t kBiasAddAtomicGroup = 16;

namespace ref {
inline void bias_add_forward(const double* x, const double* b, double* y, const BiasAddParams& p);
inline void bias_add_backward(const double* dy, double* db, const BiasAddParams& p);
}  // namespace ref

namespace cpu {
/// x (N, C, P), b (C) -> y (N, C, P); y may alias x.
void bias_add_forward(const float* x, const float* b, float* y, const BiasAddParams& p);
/// bias.grad: dy (N, C, P) -> db (C), overwritten.
void bias_add_backward(const float* dy, float* db, const BiasAddParams& p);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu, bias_grad.cu (device pointers, the engine's stream)
void bias_add_forward(const float* x, const float* b, float* y, const BiasAddParams& p);
void bias_add_backward(const float* dy, float* db, const BiasAddParams& p);
}  // namespace cuda

}  // namespace dt::kernels
