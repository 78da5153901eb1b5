// SPDX-License-Identifier: MIT
// Packing routines of cpu::gemm (internal to kernels/cpu/gemm.cpp): A micro-panels k-major (the
// MR values of step k at dst + k*MR), B panels k-major (row k at dst + k*pw), zero padding
// beyond the matrix.
// They move values only; the ORDER of the product (kernels/gemm.h) is not touched here.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define DT_GEMM_X86 1
#endif

namespace dt::kernels::cpu::gemm_detail {

/// Packs B rows [pc, pc+kc) x columns [j0, j0+nr) into dst (kc x pw, zero beyond nr).
inline void pack_b_panel(const float* b, int64_t ldb, bool trans, int64_t pc, int64_t kc,
                         int64_t j0, int64_t nr, int64_t pw, float* dst) {
    if (!trans) {
        for (int64_t k = 0; k < kc; ++k) {
            const float* src = b + (pc + k) * ldb + j0;
            float* d = dst + k * pw;
            for (int64_t j = 0; j < nr; ++j) d[j] = src[j];
            for (int64_t j = nr; j < pw; ++j) d[j] = 0.0f;
        }
        return;
    }
    // Transposed source: 4x4 blocks through registers, then the edges one by one.
    const int64_t k4 = kc / 4 * 4, j4 = nr / 4 * 4;
#if DT_GEMM_X86
    for (int64_t k = 0; k < k4; k += 4) {
        for (int64_t j = 0; j < j4; j += 4) {
            const float* src = b + (j0 + j) * ldb + pc + k;
            __m128 r0 = _mm_loadu_ps(src), r1 = _mm_loadu_ps(src + ldb);
            __m128 r2 = _mm_loadu_ps(src + 2 * ldb), r3 = _mm_loadu_ps(src + 3 * ldb);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            float* d = dst + k * pw + j;
            _mm_storeu_ps(d, r0);
            _mm_storeu_ps(d + pw, r1);
            _mm_storeu_ps(d + 2 * pw, r2);
            _mm_storeu_ps(d + 3 * pw, r3);
        }
    }
#else
    for (int64_t j = 0; j < j4; ++j)
        for (int64_t k = 0; k < k4; ++k) dst[k * pw + j] = b[(j0 + j) * ldb + pc + k];
#endif
    for (int64_t j = 0; j < nr; ++j)  // k tail (all j) and j tail (k < k4)
        for (int64_t k = j < j4 ? k4 : 0; k < kc; ++k)
            dst[k * pw + j] = b[(j0 + j) * ldb + pc + k];
    for (int64_t k = 0; k < kc; ++k) std::fill(dst + k * pw + nr, dst + (k + 1) * pw, 0.0f);
}

struct PlainB {
    const float* b;
    int64_t ldb;
    bool trans;
};

inline void pack_plain_b(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nr,
                         int64_t pw, float* dst) {
    const auto* s = static_cast<const PlainB*>(ctx);
    pack_b_panel(s->b, s->ldb, s->trans, k0, kc, j0, nr, pw, dst);
}

/// Packs A rows [i0, i0+mr) x columns [pc, pc+kc) into the k-major micro-panel dst: element
/// (i, k) at dst[k*mrp + i] (the MR values a step k of the microkernel broadcasts are adjacent:
/// one stream instead of MR), zero for mr <= i < mrp. That is a B panel of A^T: the same copy.
inline void pack_a_panel(const float* a, int64_t lda, bool trans, int64_t i0, int64_t mr,
                         int64_t mrp, int64_t pc, int64_t kc, float* dst) {
    pack_b_panel(a, lda, !trans, pc, kc, i0, mr, mrp, dst);
}

/// Packs columns [j0, j0+nr) of B rows rows[0 .. kc) into dst (kc x pw, zero beyond nr).
inline void pack_rows_panel(const float* const* rows, int64_t kc, int64_t j0, int64_t nr,
                            int64_t pw, float* dst) {
    for (int64_t k = 0; k < kc; ++k) {
        const float* __restrict src = rows[k] + j0;
        float* __restrict d = dst + k * pw;
        int64_t j = 0;  // short rows: explicit copies (GCC would call memmove for a loop)
#if DT_GEMM_X86
        for (; j + 4 <= nr; j += 4) {
            _mm_storeu_ps(d + j, _mm_loadu_ps(src + j));
            __asm__ volatile("");  // no memmove call
        }
#else
        for (; j + 4 <= nr; j += 4)
            for (int64_t t = 0; t < 4; ++t) d[j + t] = src[j + t];
#endif
        if (j < nr) d[j] = src[j];
        if (j + 1 < nr) d[j + 1] = src[j + 1];
        if (j + 2 < nr) d[j + 2] = src[j + 2];
        std::fill(d + nr, d + pw, 0.0f);
    }
}

}  // namespace dt::kernels::cpu::gemm_detail
