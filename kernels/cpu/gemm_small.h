// SPDX-License-Identifier: MIT
// Small products on the AVX-512 path without packing B (internal to kernels/cpu/gemm.cpp): A is
// read where it lies when its column k holds rows i0, i0+1, ... side by side ("adjacent": A^T
// stored (K, M), or a packed A micro-panel, stride 16), B (K, N) is read in place, and C is
// written once. A blocked product spends ~13% of a 144 x 196 x 32 product on packing A, the work
// units and the row table of B; OpenBLAS's small-matrix kernels spend nothing there, and reach
// our micro-kernel's in-place rate. Measured (in-process, interleaved): the blocked path 0.85x
// OpenBLAS on that product, an unpacked 8 x 48 tile 0.96-0.99x.
// ORDER (kernels/gemm.h): each element is one fma chain over k ascending from +0 (or from C when
// accumulating), as in every other path: the same bits.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/gemm_ukernels.h"

namespace dt::kernels::cpu::gemm_detail {

#if DT_GEMM_X86
/// C rows [0, ROWS) x columns [0, nr) (nr <= 16 NV) = A rows [0, ROWS) (adjacent, step `as`)
/// times B columns [0, nr) (row k at b + k * ldb). Loads and stores beyond nr are masked when
/// kMasked (a tile at the right edge), so nothing past the matrices is read or written.
template <int NV, int ROWS, bool kMasked>
__attribute__((target("avx512f"))) void ukr_small(int64_t kc, const float* a, int64_t as,
                                                  const float* b, int64_t ldb, float* c,
                                                  int64_t ldc, int64_t nr, bool load_c) {
    __mmask16 mask[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) mask[v] = lanes_below(nr - 16 * v);
    __m512 acc[ROWS][NV];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[i][v] = load_c ? _mm512_maskz_loadu_ps(mask[v], c + i * ldc + 16 * v)
                               : _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; ++k) {
        const float* bk = b + k * ldb;
        const float* ak = a + k * as;
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            bv[v] = kMasked ? _mm512_maskz_loadu_ps(mask[v], bk + 16 * v)
                            : _mm512_loadu_ps(bk + 16 * v);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i) {
            const __m512 av = _mm512_set1_ps(ak[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)  // ORDER: one fused multiply-add
                acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (kMasked) {
                _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mask[v], acc[i][v]);
            } else {
                _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
            }
        }
}

/// Rows [0, mr) (mr <= kTop) of one column group of nr <= 16 NV columns: the rows in pieces of
/// kTop, 4, 2 and 1 (each reads exactly its rows of A), the columns in NV vectors.
template <int NV, int kTop, bool kMasked>
void small_rows(int64_t kc, const float* a, int64_t as, const float* b, int64_t ldb, float* c,
                int64_t ldc, int64_t mr, int64_t nr, bool load_c) {
    int64_t i = 0;
    auto piece = [&](auto rows) {
        constexpr int R = decltype(rows)::value;
        ukr_small<NV, R, kMasked>(kc, a + i, as, b, ldb, c + i * ldc, ldc, nr, load_c);
        i += R;
    };
    if (mr - i >= kTop) piece(std::integral_constant<int, kTop>{});
    if (mr - i >= 4) piece(std::integral_constant<int, 4>{});
    if (mr - i >= 2) piece(std::integral_constant<int, 2>{});
    if (mr - i >= 1) piece(std::integral_constant<int, 1>{});
}

/// The whole product C (m, n) = A (m, k) B (k, n) on the small path, in tiles of 8 rows x 48
/// columns (24 accumulators, 3 B loads and 8 broadcasts per 24 fmas; 6 x 64, OpenBLAS's tile,
/// measured the same). `a_rows(i0)` gives the adjacent A from row i0 on, for i0 a multiple of 8
/// (a pre-packed A: within one 16-row panel). Column groups outermost (the group's B stays in
/// L1 while the rows go by).
template <class ARows>
void gemm_small_avx512(ARows&& a_rows, const float* b, int64_t ldb, float* c, int64_t ldc,
                       int64_t m, int64_t n, int64_t k, bool load_c) {
    constexpr int kRows = 8, kNv = 3;
    constexpr int64_t kGroup = 16 * kNv;
    const int64_t n_full = n / kGroup * kGroup, tail = n - n_full;
    for (int64_t j0 = 0; j0 < n_full; j0 += kGroup)
        for (int64_t i0 = 0; i0 < m; i0 += kRows) {
            const AdjacentA a = a_rows(i0);
            small_rows<kNv, kRows, false>(k, a.data, a.step, b + j0, ldb, c + i0 * ldc + j0, ldc,
                                          std::min<int64_t>(kRows, m - i0), kGroup, load_c);
        }
    if (tail == 0) return;
    const float* bt = b + n_full;
    float* ct = c + n_full;
    if (tail > 8) {
        for (int64_t i0 = 0; i0 < m; i0 += kRows) {
            const AdjacentA a = a_rows(i0);
            const int64_t mr = std::min<int64_t>(kRows, m - i0);
            float* ci = ct + i0 * ldc;
            if (tail > 32) {
                small_rows<3, kRows, true>(k, a.data, a.step, bt, ldb, ci, ldc, mr, tail, load_c);
            } else if (tail > 16) {
                small_rows<2, kRows, true>(k, a.data, a.step, bt, ldb, ci, ldc, mr, tail, load_c);
            } else {
                small_rows<1, kRows, true>(k, a.data, a.step, bt, ldb, ci, ldc, mr, tail, load_c);
            }
        }
        return;
    }
    for (int64_t i0 = 0; i0 < m; i0 += 48) {  // blocks of 16 rows, three at a time
        const int64_t mr = std::min<int64_t>(48, m - i0);
        const AdjacentA a[3] = {a_rows(i0), mr > 16 ? a_rows(i0 + 16) : a_rows(i0),
                                mr > 32 ? a_rows(i0 + 32) : a_rows(i0)};
        float* ci = ct + i0 * ldc;
        const BPacked bk{bt, ldb};  // row k of the edge at bt + k * ldb
        if (mr > 32) {
            ukr_avx512_narrow<3>(k, a, bk, ci, ldc, mr, tail, load_c);
        } else if (mr > 16) {
            ukr_avx512_narrow<2>(k, a, bk, ci, ldc, mr, tail, load_c);
        } else {
            ukr_avx512_narrow<1>(k, a, bk, ci, ldc, mr, tail, load_c);
        }
    }
}
#endif

}  // namespace dt::kernels::cpu::gemm_detail
