// SPDX-License-Identifier: MIT
// Softmax cross-entropy on the CPU; recipe, modes and ORDER in kernels/softmax_xent.h. Rows are
// owned by one iteration each; the batch mean combines the per-row losses as the AccumSpec says.
#include "kernels/softmax_xent.h"

#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/fast_math.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;
using common::dt_expf;
using common::dt_logf;

constexpr int64_t kParallelMin = 16384;  // logits below which one thread is faster

// Site loss: the batch total of the per-row losses (kAtomic is summed inside the row loop).
float loss_total(const float* loss_rows, const SoftmaxXentParams& p) {
    switch (p.accum.mode) {
        case AccumMode::kTree: return common::reduce_tree_combine(loss_rows, p.N);  // ORDER: T
        case AccumMode::kKahan: {
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
        case AccumMode::kExact: return common::exact_sum(loss_rows, p.N);  // ORDER: none
        case AccumMode::kPermuted: {
            std::vector<uint32_t> order(static_cast<std::size_t>(p.N));
            common::permute_order(order.data(), p.N, p.accum.permute_key);
            return common::permuted_sum(loss_rows, order.data(), p.N);  // ORDER: permuted
        }
        case AccumMode::kAtomic: break;
    }
    return 0.0f;
}

}  // namespace

void softmax_xent_forward(const float* logits, const int64_t* labels, float* rowmax,
                          float* rowsum, float* loss_rows, float* loss,
                          const SoftmaxXentParams& p) {
    const int64_t K = p.K;
    const bool atomic = p.accum.mode == AccumMode::kAtomic;
    float atomic_total = 0.0f;  // kAtomic: every row's loss is atomic-added here (no ORDER)
#pragma omp parallel for schedule(static) if (p.N * K >= kParallelMin)
    for (int64_t n = 0; n < p.N; ++n) {
        const float* l = logits + n * K;
        float m = l[0];
        for (int64_t k = 1; k < K; ++k) m = l[k] > m ? l[k] : m;  // first maximum
        float s = 0.0f;
        for (int64_t k = 0; k < K; ++k) s = s + dt_expf(l[k] - m);  // ORDER: class order
        rowmax[n] = m;
        rowsum[n] = s;
        const float ln = dt_logf(s) - (l[labels[n]] - m);  // ORDER: log(s) - (l_label - m)
        loss_rows[n] = ln;
        if (atomic) common::atomic_add_float(&atomic_total, ln);
    }
    // ORDER: the site's total over samples, then one division by N.
    const float total = atomic ? atomic_total : loss_total(loss_rows, p);
    *loss = total / static_cast<float>(p.N);
}

void softmax_xent_backward(const float* logits, const int64_t* labels, const float* rowmax,
                           const float* rowsum, float dloss, float* dlogits,
                           const SoftmaxXentParams& p) {
    const int64_t K = p.K;
    const float g = dloss / static_cast<float>(p.N);  // ORDER: dloss / N once
#pragma omp parallel for schedule(static) if (p.N * K >= kParallelMin)
    for (int64_t n = 0; n < p.N; ++n) {
        const float* l = logits + n * K;
        float* d = dlogits + n * K;
        const float m = rowmax[n], s = rowsum[n];
        for (int64_t k = 0; k < K; ++k) {
            const float prob = dt_expf(l[k] - m) / s;
            // ORDER: (prob - onehot) * g
            d[k] = (prob - (k == labels[n] ? 1.0f : 0.0f)) * g;
        }
    }
}

void argmax_rows(const float* x, int64_t* out, int64_t N, int64_t K) {
#pragma omp parallel for schedule(static) if (N * K >= kParallelMin)
    for (int64_t n = 0; n < N; ++n) {
        const float* r = x + n * K;
        int64_t best = 0;
        for (int64_t k = 1; k < K; ++k)
            if (r[k] > r[best]) best = k;  // strict: the first maximum wins
        out[n] = best;
    }
}

}  // namespace dt::kernels::cpu
