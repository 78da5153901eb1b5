// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA softmax cross-entropy and argmax kernels
// (kernels/cuda/softmax_xent.cu), host-device, tested on the host over whole grids. They run the
// recipe's pieces of kernels/softmax_xent.h, as the CPU does: one thread per row for m, s and
// loss_n; the site `loss` combined by one thread (N is a batch: a few hundred leaves at most);
// one thread per logit for the gradient.
#pragma once
#include <cstdint>

#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/softmax_xent.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// Rows owned by this thread; kAtomic: each loss_n is atomic-added into *atomic_total (starts
/// at +0) right after it is computed, as on the CPU (no ORDER: the nondeterministic mode).
DT_HD void softmax_xent_rows_body(const GridPos& t, const float* logits, const int64_t* labels,
                                  float* rowmax, float* rowsum, float* loss_rows,
                                  float* atomic_total, const SoftmaxXentParams& p) {
    common::grid_stride(t, p.N, [&](int64_t n) {
        const float ln = softmax_xent_row(logits, labels, rowmax, rowsum, n, p.K);
        loss_rows[n] = ln;
        if (p.accum.mode == common::AccumMode::kAtomic) common::atomic_add_float(atomic_total, ln);
    });
}

/// Global thread 0: *loss = total / N (ORDER: the site's total, then one division by N).
/// `order` is scratch for N indices (kPermuted).
DT_HD void softmax_xent_total_body(const GridPos& t, const float* loss_rows,
                                   const float* atomic_total, float* loss, uint32_t* order,
                                   const SoftmaxXentParams& p) {
    if (t.global() != 0) return;
    const float total = p.accum.mode == common::AccumMode::kAtomic
                            ? *atomic_total
                            : softmax_xent_total(loss_rows, p, order);
    *loss = total / softmax_xent_divisor(p);
}

/// dlogits (N, K), one element per thread; dloss: the loss's upstream gradient, one float in
/// device memory (read there: no wait for the host to learn it).
DT_HD void softmax_xent_backward_body(const GridPos& t, const float* logits, const int64_t* labels,
                                      const float* rowmax, const float* rowsum, const float* dloss,
                                      float* dlogits, const SoftmaxXentParams& p) {
    // ORDER: g = dloss / N, the same single division as the CPU's (each thread makes it).
    const float g = *dloss / softmax_xent_divisor(p);
    common::grid_stride(t, p.N * p.K, [&](int64_t i) {
        dlogits[i] = softmax_xent_grad(logits, labels, rowmax, rowsum, g, i / p.K, i % p.K, p.K);
    });
}

DT_HD void argmax_rows_body(const GridPos& t, const float* x, int64_t* out, int64_t N, int64_t K) {
    common::grid_stride(t, N, [&](int64_t n) { out[n] = argmax_row(x, n, K); });
}

}  // namespace dt::kernels::cuda
