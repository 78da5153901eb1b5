// SPDX-License-Identifier: MIT
// Contract of the softmax cross-entropy kernels. logits, dlogits are (N, K); labels (N) int64 in
// [0, K) (checked by the op); rowmax, rowsum, loss_rows are (N); loss is one float.
//
// Numeric recipe (exp/log from kernels/common/fast_math.h, so every backend gives equal bits):
//   m_n    = first maximum of row n (strict >)
//   s_n    = sum over k of dt_expf(l[n,k] - m_n), from +0 in class order              // ORDER
//   loss_n = dt_logf(s_n) - (l[n,label] - m_n)
//   loss   = total(loss_0, ..., loss_{N-1}) / N   (site loss, one leaf per sample, see below)
// Backward, with g = dloss / N computed once:
//   dlogits[n,k] = ((dt_expf(l[n,k] - m_n) / s_n) - [k == label]) * g              // ORDER
// Forward saves m_n and s_n so the backward recomputes the same exponentials bit for bit.
// Site loss (the AccumSpec `accum` in the Params) decides only how the N per-sample losses are
// combined into total; m_n, s_n (the within-sample sum over classes stays sequential in class
// order in EVERY mode: it is not a reduction across samples), loss_n and the backward are the
// same in all modes:
//   kTree      total = T(loss_0, ..., loss_{N-1})  (reduce_tree.h)                     // ORDER
//   kKahan     total = kahan_value(T_k(leaf_0, ..., leaf_{N-1})), leaf_n = (loss_n, +0) (one
//              kahan_add from (+0, +0)), T_k = the same tree with kahan_merge (accum_kahan.h)
//   kExact     total = exact_value(exact sum of loss_0 .. loss_{N-1}) (accum_exact.h): permuting
//              the samples permutes loss_rows and changes no bit of loss
//   kAtomic    total starts at +0; each thread atomic-adds every loss_n it computes, right after
//              computing it (atomic_add.h): nondeterministic with 2+ threads (the CPU row loop
//              is parallel from N*K >= 16384 logits; below that it adds in sample order)
//   kPermuted  total = +0 + loss_{o[0]} + loss_{o[1]} + ..., o = permute_order(N, permute_key)
#pragma once
#include <cstdint>

#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct SoftmaxXentParams {
    int64_t N = 0, K = 0;
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);  // site loss (forward)
};

namespace ref {
inline void softmax_xent_forward(const double* logits, const int64_t* labels, double* rowmax,
                                 double* rowsum, double* loss_rows, double* loss,
                                 const SoftmaxXentParams& p);
inline void softmax_xent_backward(const double* logits, const int64_t* labels, const double* rowmax,
                                  const double* rowsum, double dloss, double* dlogits,
                                  const SoftmaxXentParams& p);
}  // namespace ref

namespace cpu {
void softmax_xent_forward(const float* logits, const int64_t* labels, float* rowmax,
                          float* rowsum, float* loss_rows, float* loss,
                          const SoftmaxXentParams& p);
void softmax_xent_backward(const float* logits, const int64_t* labels, const float* rowmax,
                           const float* rowsum, float dloss, float* dlogits,
                           const SoftmaxXentParams& p);
/// out[n] = index of the first maximum of row n of x (N, K).
void argmax_rows(const float* x, int64_t* out, int64_t N, int64_t K);
}  // namespace cpu

}  // namespace dt::kernels
