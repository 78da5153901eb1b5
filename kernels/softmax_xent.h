// SPDX-License-Identifier: MIT
// Contract of the softmax cross-entropy kernels. logits, dlogits are (N, K); labels (N) int64 in
// [0, K) (checked by the op); rowmax, rowsum, loss_rows are (N); loss is one float.
//
// Numeric recipe (exp/log from kernels/common/fast_math.h, so every backend gives equal bits):
//   m_n    = first maximum of row n (strict >)
//   s_n    = sum over k of dt_expf(l[n,k] - m_n), from +0 in class order              // ORDER
//   loss_n = dt_logf(s_n) - (l[n,label] - m_n)
//   loss   = total(loss_0, ..., loss_{N-1}) / N   (site loss, one leaf per sample, see below)
// Backward, with g = dloss / N computed once (N: the divisor, softmax_xent_divisor below; dloss
// is read from one float in the kernel's device memory, so the host never waits to learn it):
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

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/fast_math.h"
#include "kernels/common/hd.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels {

struct SoftmaxXentParams {
    int64_t N = 0, K = 0;
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);  // site loss (forward)
    // The mean's divisor (0: N). A batch that is one part of a larger one (ranks, micro-batches:
    // engine/runtime/batch_split.h) divides by the whole batch's size, so that its dlogits are
    // the whole batch's; its forward asks for the undivided total (mean_n = 1: total / 1 is
    // exact), which the engine completes over the parts before it divides.
    int64_t mean_n = 0;
};

/// The divisor of the loss and of g: p.mean_n, or N when it is 0.
DT_HD float softmax_xent_divisor(const SoftmaxXentParams& p) {
    return static_cast<float>(p.mean_n > 0 ? p.mean_n : p.N);
}

// ---- the recipe's pieces, host-device: what cpu:: and cuda:: both run ----

/// Row n: m_n, s_n and loss_n (returned), as the recipe above.
DT_HD float softmax_xent_row(const float* logits, const int64_t* labels, float* rowmax,
                             float* rowsum, int64_t n, int64_t K) {
    const float* l = logits + n * K;
    float m = l[0];
    for (int64_t k = 1; k < K; ++k) m = l[k] > m ? l[k] : m;  // first maximum
    float s = 0.0f;
    for (int64_t k = 0; k < K; ++k) s = s + common::dt_expf(l[k] - m);  // ORDER: class order
    rowmax[n] = m;
    rowsum[n] = s;
    return common::dt_logf(s) - (l[labels[n]] - m);  // ORDER: log(s) - (l_label - m)
}

/// Site loss, every mode but kAtomic (summed as the rows are computed): the total of
/// loss_rows[0..N). `order` is scratch for N indices (kPermuted only).
DT_HD float softmax_xent_total(const float* loss_rows, const SoftmaxXentParams& p,
                               uint32_t* order) {
    switch (p.accum.mode) {
        case common::AccumMode::kTree:
            return common::reduce_tree_combine(loss_rows, p.N);  // ORDER: T
        case common::AccumMode::kKahan: {
            // ORDER: leaves (loss_n, +0) combined by the kahan tree, then kahan_value.
            common::KahanTreeSum t;
            common::kahan_tree_sum_init(t);
            for (int64_t n = 0; n < p.N; ++n) {
                common::KahanSum leaf = common::kahan_zero();
                common::kahan_add(leaf, loss_rows[n]);
                common::kahan_tree_sum_push(t, leaf);
            }
            return common::kahan_value(common::kahan_tree_sum_finish(t));
        }
        case common::AccumMode::kExact: return common::exact_sum(loss_rows, p.N);  // ORDER: none
        case common::AccumMode::kPermuted:
            common::permute_order(order, p.N, p.accum.permute_key);
            return common::permuted_sum(loss_rows, order, p.N);  // ORDER: permuted
        case common::AccumMode::kAtomic: break;
    }
    return 0.0f;
}

/// dlogits[n, k], with g = dloss / N.
DT_HD float softmax_xent_grad(const float* logits, const int64_t* labels, const float* rowmax,
                              const float* rowsum, float g, int64_t n, int64_t k, int64_t K) {
    const float prob = common::dt_expf(logits[n * K + k] - rowmax[n]) / rowsum[n];
    return (prob - (k == labels[n] ? 1.0f : 0.0f)) * g;  // ORDER: (prob - onehot) * g
}

/// Index of the first maximum of row n of x (N, K) (strict >: the first one wins).
DT_HD int64_t argmax_row(const float* x, int64_t n, int64_t K) {
    const float* r = x + n * K;
    int64_t best = 0;
    for (int64_t k = 1; k < K; ++k)
        if (r[k] > r[best]) best = k;
    return best;
}

namespace ref {
inline void softmax_xent_forward(const double* logits, const int64_t* labels, double* rowmax,
                                 double* rowsum, double* loss_rows, double* loss,
                                 const SoftmaxXentParams& p);
inline void softmax_xent_backward(const double* logits, const int64_t* labels, const double* rowmax,
                                  const double* rowsum, double dloss, double* dlogits,
                                  const SoftmaxXentParams& p);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/softmax_xent.cpp) and
// cuda:: (kernels/cuda/softmax_xent.cu: device pointers, the engine's stream). argmax_rows:
// out[n] = index of the first maximum of row n of x (N, K).
#define DT_SOFTMAX_XENT_KERNELS                                                                 \
    void softmax_xent_forward(const float* logits, const int64_t* labels, float* rowmax,        \
                              float* rowsum, float* loss_rows, float* loss,                     \
                              const SoftmaxXentParams& p);                                      \
    void softmax_xent_backward(const float* logits, const int64_t* labels, const float* rowmax, \
                               const float* rowsum, const float* dloss, float* dlogits,         \
                               const SoftmaxXentParams& p);                                     \
    void argmax_rows(const float* x, int64_t* out, int64_t N, int64_t K);

namespace cpu {
DT_SOFTMAX_XENT_KERNELS
}  // namespace cpu

namespace cuda {
DT_SOFTMAX_XENT_KERNELS
}  // namespace cuda

#undef DT_SOFTMAX_XENT_KERNELS

}  // namespace dt::kernels
