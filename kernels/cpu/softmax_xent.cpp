// SPDX-License-Identifier: MIT
// Softmax cross-entropy on the CPU; recipe, modes and ORDER in kernels/softmax_xent.h (whose
// host-device pieces, softmax_xent_row / _total / _grad and argmax_row, this runs). Rows are
// owned by one iteration each; the batch mean combines the per-row losses as the AccumSpec says.
#include "kernels/softmax_xent.h"

#include <vector>

#include "kernels/common/atomic_add.h"

namespace dt::kernels::cpu {

namespace {
constexpr int64_t kParallelMin = 16384;  // logits below which one thread is faster
}  // namespace

void softmax_xent_forward(const float* logits, const int64_t* labels, float* rowmax,
                          float* rowsum, float* loss_rows, float* loss,
                          const SoftmaxXentParams& p) {
    const bool atomic = p.accum.mode == common::AccumMode::kAtomic;
    float atomic_total = 0.0f;  // kAtomic: every row's loss is atomic-added here (no ORDER)
#pragma omp parallel for schedule(static) if (p.N * p.K >= kParallelMin)
    for (int64_t n = 0; n < p.N; ++n) {
        const float ln = softmax_xent_row(logits, labels, rowmax, rowsum, n, p.K);
        loss_rows[n] = ln;
        if (atomic) common::atomic_add_float(&atomic_total, ln);
    }
    std::vector<uint32_t> order(p.accum.mode == common::AccumMode::kPermuted ? p.N : 0);
    // ORDER: the site's total over samples, then one division by N.
    const float total = atomic ? atomic_total : softmax_xent_total(loss_rows, p, order.data());
    *loss = total / softmax_xent_divisor(p);
}

void softmax_xent_backward(const float* logits, const int64_t* labels, const float* rowmax,
                           const float* rowsum, const float* dloss, float* dlogits,
                           const SoftmaxXentParams& p) {
    const float g = *dloss / softmax_xent_divisor(p);  // ORDER: dloss / N once
#pragma omp parallel for schedule(static) if (p.N * p.K >= kParallelMin)
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t k = 0; k < p.K; ++k)
            dlogits[n * p.K + k] = softmax_xent_grad(logits, labels, rowmax, rowsum, g, n, k, p.K);
}

void argmax_rows(const float* x, int64_t* out, int64_t N, int64_t K) {
#pragma omp parallel for schedule(static) if (N * K >= kParallelMin)
    for (int64_t n = 0; n < N; ++n) out[n] = argmax_row(x, n, K);
}

}  // namespace dt::kernels::cpu
