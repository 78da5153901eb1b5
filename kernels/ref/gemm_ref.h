// SPDX-License-Identifier: MIT
// Reference GEMM in double precision (deliberately naive): same indexing as cpu::gemm, products
// and sums in double, k ascending.
#pragma once
#include "kernels/gemm.h"

namespace dt::kernels::ref {

inline void gemm(const double* a, const double* b, double* c, const GemmParams& p) {
    const int64_t lda = gemm_lda(p), ldb = gemm_ldb(p), ldc = gemm_ldc(p);
    for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
            double acc = p.accumulate ? c[i * ldc + j] : 0.0;
            for (int64_t k = 0; k < p.k; ++k) {
                const double av = p.trans_a ? a[k * lda + i] : a[i * lda + k];
                const double bv = p.trans_b ? b[j * ldb + k] : b[k * ldb + j];
                acc += av * bv;
            }
            c[i * ldc + j] = acc;
        }
    }
}

}  // namespace dt::kernels::ref
