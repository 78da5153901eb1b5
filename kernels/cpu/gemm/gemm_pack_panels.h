// SPDX-License-Identifier: MIT
// The packing routines of cpu::gemm (private to kernels/cpu/gemm/): A micro-panels k-major (the
// MR values of step k at dst + k*MR), B panels k-major (row k at dst + k*pw) from a plain,
// transposed or row-pointer B, zero padding beyond the matrix; AVX-512 versions by masked loads
// and register transposes (kernels/cpu/transpose_avx512.h).
// They move values only; the ORDER of the product (kernels/gemm.h) is not touched here.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/gemm/gemm_microkernels.h"
#include "kernels/cpu/transpose_avx512.h"
#include "kernels/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define DT_GEMM_X86 1
#endif

namespace dt::kernels::cpu::gemm_detail {

#if DT_GEMM_X86
/// pack_b_panel's transposed case on the AVX-512 path: blocks of 16 columns x 16 k, each 16
/// masked row loads (absent columns and k beyond kc read as +0), one register transpose and up
/// to 16 masked stores of the block's lanes of dst (zero padding included).
__attribute__((target("avx512f"))) inline void pack_transposed_avx512(
    const float* b, int64_t ldb, int64_t pc, int64_t kc, int64_t j0, int64_t nr, int64_t pw,
    float* dst) {
    for (int64_t jb = 0; jb < pw; jb += 16) {
        const int64_t lanes = std::min<int64_t>(16, pw - jb);
        const int64_t live = std::clamp<int64_t>(nr - jb, 0, lanes);
        const auto store = lanes_below(lanes);
        for (int64_t kb = 0; kb < kc; kb += 16) {
            const int64_t kl = std::min<int64_t>(16, kc - kb);
            const auto take = lanes_below(kl);
            __m512 r[16];
            for (int64_t t = 0; t < 16; ++t)
                r[t] = t < live ? _mm512_maskz_loadu_ps(take, b + (j0 + jb + t) * ldb + pc + kb)
                                : _mm512_setzero_ps();
            transpose16x16(r);
            for (int64_t t = 0; t < kl; ++t)
                _mm512_mask_storeu_ps(dst + (kb + t) * pw + jb, store, r[t]);
        }
    }
}

/// Rows of nr floats (row k from row(k)) into dst rows of pw, zero beyond nr, on the AVX-512
/// path: one masked load and store per 16 lanes (a short fill per row was a memset call).
template <class Row>
__attribute__((target("avx512f"))) inline void pack_rows_avx512(Row row, int64_t kc, int64_t nr,
                                                                int64_t pw, float* dst) {
    for (int64_t jb = 0; jb < pw; jb += 16) {
        const int64_t lanes = std::min<int64_t>(16, pw - jb);
        const int64_t live = std::clamp<int64_t>(nr - jb, 0, lanes);
        const auto take = lanes_below(live);
        const auto store = lanes_below(lanes);
        for (int64_t k = 0; k < kc; ++k)
            _mm512_mask_storeu_ps(dst + k * pw + jb, store,
                                  _mm512_maskz_loadu_ps(take, row(k) + jb));
    }
}
#endif

/// Packs B rows [pc, pc+kc) x columns [j0, j0+nr) into dst (kc x pw, zero beyond nr).
inline void pack_b_panel(const float* b, int64_t ldb, bool trans, int64_t pc, int64_t kc,
                         int64_t j0, int64_t nr, int64_t pw, float* dst) {
    if (!trans) {
#if DT_GEMM_X86
        if (cpu_isa() == CpuIsa::kAvx512) {  // the path in force (tests force each one)
            const float* src = b + pc * ldb + j0;
            return pack_rows_avx512([&](int64_t k) { return src + k * ldb; }, kc, nr, pw, dst);
        }
#endif
        for (int64_t k = 0; k < kc; ++k) {
            const float* src = b + (pc + k) * ldb + j0;
            float* d = dst + k * pw;
            for (int64_t j = 0; j < nr; ++j) d[j] = src[j];
            for (int64_t j = nr; j < pw; ++j) d[j] = 0.0f;
        }
        return;
    }
#if DT_GEMM_X86
    if (cpu_isa() == CpuIsa::kAvx512) {  // the path in force (tests force each one)
        pack_transposed_avx512(b, ldb, pc, kc, j0, nr, pw, dst);
        return;
    }
#endif
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

/// Width of B panel q (of nrf columns) when the block has nc columns: a last panel of at most
/// nrf/2 columns is packed (and computed) at half width.
inline int64_t plain_panel_width(int64_t nrf, int64_t q, int64_t nc) {
    return nc - q * nrf <= nrf / 2 ? nrf / 2 : nrf;
}

#if DT_GEMM_X86
/// pack_plain_rows for 16-column panels: one masked load and store per panel row.
__attribute__((target("avx512f"))) inline void pack_plain_rows_avx512(
    const PlainB& b, int64_t pc, int64_t kc, int64_t j0, int64_t nc, int64_t q_lo, int64_t q_hi,
    float* dst) {
    const int64_t q_full = std::min(q_hi, nc / 16);  // panels of 16 columns
    for (int64_t k = 0; k < kc; ++k) {
        const float* src = b.b + (pc + k) * b.ldb + j0;
        for (int64_t q = q_lo; q < q_full; ++q)
            _mm512_storeu_ps(dst + q * kc * 16 + k * 16, _mm512_loadu_ps(src + q * 16));
        for (int64_t q = std::max(q_lo, q_full); q < q_hi; ++q) {  // the last, partial one
            const int64_t pw = plain_panel_width(16, q, nc), nr = nc - q * 16;
            _mm512_mask_storeu_ps(dst + q * kc * 16 + k * pw, lanes_below(pw),
                                  _mm512_maskz_loadu_ps(lanes_below(nr), src + q * 16));
        }
    }
}
#endif

/// Panels [q_lo, q_hi) (of nrf columns) of a K block [pc, pc+kc) x columns [j0, j0+nc) of a
/// plain untransposed B, copied row by row across the panels: each row of B is read once, in
/// order (prefetchable). Panel by panel, a 16-float piece per row at a stride of ldb floats
/// touched a new page per row (ResNet-sized B: a third of the product's time). Panel q at
/// dst + q * kc * nrf with rows of its width pw (plain_panel_width), zero beyond its columns,
/// as pack_b_panel writes it.
inline void pack_plain_rows(const PlainB& b, int64_t pc, int64_t kc, int64_t j0, int64_t nc,
                            int64_t q_lo, int64_t q_hi, int64_t nrf, float* dst) {
#if DT_GEMM_X86
    if (nrf == 16 && cpu_isa() == CpuIsa::kAvx512)  // the path in force (tests force each)
        return pack_plain_rows_avx512(b, pc, kc, j0, nc, q_lo, q_hi, dst);
#endif
    for (int64_t k = 0; k < kc; ++k) {
        const float* src = b.b + (pc + k) * b.ldb + j0;
        for (int64_t q = q_lo; q < q_hi; ++q) {
            const int64_t pw = plain_panel_width(nrf, q, nc), nr = std::min(nrf, nc - q * nrf);
            float* d = dst + q * kc * nrf + k * pw;
            for (int64_t j = 0; j < nr; ++j) d[j] = src[q * nrf + j];
            for (int64_t j = nr; j < pw; ++j) d[j] = 0.0f;
        }
    }
}

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
#if DT_GEMM_X86
    if (cpu_isa() == CpuIsa::kAvx512)
        return pack_rows_avx512([&](int64_t k) { return rows[k] + j0; }, kc, nr, pw, dst);
#endif
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
