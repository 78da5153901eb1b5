// SPDX-License-Identifier: MIT
// The small path of cpu::gemm (private to kernels/cpu/gemm/): small AVX-512 products, unpacked.
// A is read where it lies, "adjacent" when its column k holds rows i0, i0+1, ... side by side
// (A^T stored (K, M), or a packed A micro-panel, stride 16) or row-major (the first column group
// then leaves an adjacent copy for the rest), B (K, N) is read in place, C written once per K
// block. A blocked product spends ~13% of a 144 x 196 x 32 product on packing A, the work units
// and the row table of B; OpenBLAS's small-matrix kernels spend nothing there, and reach our
// micro-kernel's in-place rate. Measured (in-process, interleaved): the blocked path 0.85x
// OpenBLAS on that product, an unpacked 8 x 48 tile 0.96-0.99x.
// ORDER (kernels/gemm.h): each element is one fma chain over k ascending from +0 (or from C when
// accumulating), as in every other path: the same bits.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/gemm/gemm_microkernels.h"
#include "kernels/gemm.h"

namespace dt::kernels::cpu::gemm_detail {

/// Width of the small path's column groups (3 vectors).
constexpr int64_t kSmallGroupCols = 48;

/// Where a row-major A's adjacent copy goes: element (i, k) at data[k * step + i].
struct ACopy {
    float* data = nullptr;
    int64_t step = 0;
};

#if DT_GEMM_X86
/// C rows [0, ROWS) x columns [0, nr) (nr <= 16 NV) = A rows [0, ROWS) times B columns [0, nr)
/// (row k at b + k * ldb). A is adjacent (element (i, k) at a[k * as + i]) or, when kRowMajor,
/// row-major (at a[i * as + k]); a row-major tile also copies each A value it reads to
/// pk[k * ps + i], the adjacent copy the later column groups read. Loads and stores beyond nr are
/// masked when kMasked (a tile at the right edge), so nothing past the matrices is touched.
template <int NV, int ROWS, bool kMasked, bool kRowMajor = false>
__attribute__((target("avx512f"), always_inline)) inline void ukr_small(int64_t kc, const float* a,
                                                                        int64_t as, const float* b,
                                                                        int64_t ldb, float* c,
                                                                        int64_t ldc, int64_t nr,
                                                                        bool load_c,
                                                                        float* pk = nullptr,
                                                                        int64_t ps = 0) {
    __mmask16 mask[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) mask[v] = lanes_below(nr - 16 * v);
    __m512 acc[ROWS][NV];
    const float* cl = c;  // row by row, as the stores below
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i, cl += ldc)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[i][v] =
                load_c ? _mm512_maskz_loadu_ps(mask[v], cl + 16 * v) : _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; ++k) {
        const float* bk = b + k * ldb;
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            bv[v] = kMasked ? _mm512_maskz_loadu_ps(mask[v], bk + 16 * v)
                            : _mm512_loadu_ps(bk + 16 * v);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i) {
            const float* ai = kRowMajor ? a + i * as + k : a + k * as + i;
            if constexpr (kRowMajor) {  // copied through an integer register: a broadcast from
                uint32_t bits;          // a float register would take a vector pipe
                std::memcpy(&bits, ai, sizeof bits);
                std::memcpy(pk + k * ps + i, &bits, sizeof bits);
            }
            const __m512 av = _mm512_set1_ps(*ai);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)  // ORDER: one fused multiply-add
                acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
        }
    }
    // C row by row from one pointer: written as c + i * ldc, the compiler (inlined into the
    // row loop of small_group) kept a pointer per row and spilled them, ~15 stack operations
    // per tile; stepped, it addresses rows as base + ldc * {1, 2, 4}. Measured: 144 x 196 x 32
    // (A^T) 0.97 -> 1.01x OpenBLAS, 48 x 196 x 32 0.96 -> 1.00x.
    float* ci = c;
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (kMasked) {
                _mm512_mask_storeu_ps(ci + 16 * v, mask[v], acc[i][v]);
            } else {
                _mm512_storeu_ps(ci + 16 * v, acc[i][v]);
            }
        }
        ci += ldc;
    }
}

/// One column group of nr <= 16 NV columns, every row: tiles of 8 rows down the group, then the
/// last rows in pieces of 4, 2 and 1 (each reads exactly its rows of A). One call per group, the
/// tile inlined: set-up and masks are hoisted out of the row loop (per-tile calls spent ~7% of a
/// 144 x 196 x 32 product outside the k loop).
/// With kRowMajor, a_rows(i) = {row i of a row-major A, lda}, and the group writes the adjacent
/// copy of A (element (i, k) at copy.data[k * copy.step + i]) as it goes.
template <int NV, bool kMasked, bool kRowMajor = false, class ARows>
__attribute__((target("avx512f"))) void small_group(const ARows& a_rows, const float* b,
                                                    int64_t ldb, float* c, int64_t ldc, int64_t m,
                                                    int64_t k, int64_t nr, bool load_c,
                                                    ACopy copy = {}) {
    constexpr int kRows = 8;
    auto sink = [&](int64_t r) { return kRowMajor ? copy.data + r : nullptr; };
    int64_t i = 0;
    for (; i + kRows <= m; i += kRows) {
        const AdjacentA a = a_rows(i);
        ukr_small<NV, kRows, kMasked, kRowMajor>(k, a.data, a.step, b, ldb, c + i * ldc, ldc, nr,
                                                 load_c, sink(i), copy.step);
    }
    if (i == m) return;
    const AdjacentA a = a_rows(i);  // within the last 8-row tile
    const int64_t row = kRowMajor ? a.step : 1;  // from row i to the next
    const float* ai = a.data;
    float* ci = c + i * ldc;
    if (m - i >= 4) {
        ukr_small<NV, 4, kMasked, kRowMajor>(k, ai, a.step, b, ldb, ci, ldc, nr, load_c, sink(i),
                                             copy.step);
        ai += 4 * row, ci += 4 * ldc, i += 4;
    }
    if (m - i >= 2) {
        ukr_small<NV, 2, kMasked, kRowMajor>(k, ai, a.step, b, ldb, ci, ldc, nr, load_c, sink(i),
                                             copy.step);
        ai += 2 * row, ci += 2 * ldc, i += 2;
    }
    if (m - i >= 1)
        ukr_small<NV, 1, kMasked, kRowMajor>(k, ai, a.step, b, ldb, ci, ldc, nr, load_c, sink(i),
                                             copy.step);
}

/// A group of 8 < nr < 48 columns in masked vectors, as few as cover nr (small_group).
template <bool kRowMajor = false, class ARows>
void small_masked_group(const ARows& a_rows, const float* b, int64_t ldb, float* c, int64_t ldc,
                        int64_t m, int64_t k, int64_t nr, bool load_c, ACopy copy = {}) {
    if (nr > 32) {
        small_group<3, true, kRowMajor>(a_rows, b, ldb, c, ldc, m, k, nr, load_c, copy);
    } else if (nr > 16) {
        small_group<2, true, kRowMajor>(a_rows, b, ldb, c, ldc, m, k, nr, load_c, copy);
    } else {
        small_group<1, true, kRowMajor>(a_rows, b, ldb, c, ldc, m, k, nr, load_c, copy);
    }
}

/// One K block (depth kc) of C (m, n) += A (m, kc) B (kc, n) on the small path, in tiles of 8
/// rows x 48 columns (24 accumulators, 3 B loads and 8 broadcasts per 24 fmas; 6 x 64,
/// OpenBLAS's tile, measured the same). `a_rows(i0)` gives the adjacent A from row i0 on, for i0
/// a multiple of 8 (a pre-packed A: within one 16-row panel). Column groups outermost (the
/// group's B stays in L1 while the rows go by).
template <class ARows>
void small_block(const ARows& a_rows, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                 int64_t n, int64_t k, bool load_c) {
    constexpr int kNv = kSmallGroupCols / 16;
    constexpr int64_t kGroup = kSmallGroupCols;
    const int64_t n_full = n / kGroup * kGroup, tail = n - n_full;
    for (int64_t j0 = 0; j0 < n_full; j0 += kGroup)
        small_group<kNv, false>(a_rows, b + j0, ldb, c + j0, ldc, m, k, kGroup, load_c);
    if (tail == 0) return;
    const float* bt = b + n_full;
    float* ct = c + n_full;
    if (tail > 8) {
        small_masked_group(a_rows, bt, ldb, ct, ldc, m, k, tail, load_c);
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

/// One K block (depth kc) with a row-major A (row i at a + i * lda): the first column group
/// reads A where it lies and writes its adjacent copy (kc x m, element (i, k) at pk[k * m + i])
/// on the way; the rest of the block reads the copy (small_block). A pass of its own packing A
/// first took ~3% of 32 x 196 x 144 and ~10% of 32 x 49 x 288.
inline void small_block_row_major(const float* a, int64_t lda, float* pk, const float* b,
                                  int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
                                  int64_t kc, bool load_c) {
    const ACopy copy{pk, m};
    auto in_place = [&](int64_t i0) { return AdjacentA{a + i0 * lda, lda}; };
    if (n > 8 && n < kSmallGroupCols) {  // one masked group covers the product
        small_masked_group<true>(in_place, b, ldb, c, ldc, m, kc, n, load_c, copy);
        return;
    }
    int64_t done = 0;
    if (n >= kSmallGroupCols) {
        small_group<kSmallGroupCols / 16, false, true>(in_place, b, ldb, c, ldc, m, kc,
                                                       kSmallGroupCols, load_c, copy);
        done = kSmallGroupCols;
    } else {  // n <= 8: only the narrow edge kernel, which reads the copy
        for (int64_t i = 0; i < m; ++i)
            for (int64_t k = 0; k < kc; ++k) pk[k * m + i] = a[i * lda + k];
    }
    small_block([&](int64_t i0) { return AdjacentA{pk + i0, m}; }, b + done, ldb, c + done, ldc,
                m, n - done, kc, load_c);
}

/// The small path's row-major A: row i at data + i * lda, and scratch for one K block of its
/// adjacent copy (min(k, kGemmKc) x m floats).
struct RowMajorA {
    const float* data;
    int64_t lda;
    float* copy;
};

/// C (m, n) = A (m, k) B (k, n) (+ C when accumulating) on the small path, B (k, n) read in
/// place at b with row stride ldb. A: `a_rows(i0, pc, kc)` gives the adjacent A of K block
/// [pc, pc + kc) from row i0 on, or a RowMajorA.
/// ORDER: K blocks of kGemmKc in ascending order, as on the blocked path: each element's partial
/// sum is stored to C and reloaded (exact), so its fma chain runs on unbroken.
template <class A>
void gemm_small_avx512(const A& a, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                       int64_t n, int64_t k, bool accumulate) {
    for (int64_t pc = 0; pc < k; pc += kGemmKc) {
        const int64_t kc = std::min(kGemmKc, k - pc);
        const bool load_c = accumulate || pc > 0;
        if constexpr (std::is_same_v<A, RowMajorA>) {
            small_block_row_major(a.data + pc, a.lda, a.copy, b + pc * ldb, ldb, c, ldc, m, n, kc,
                                  load_c);
        } else {
            small_block([&](int64_t i0) { return a(i0, pc, kc); }, b + pc * ldb, ldb, c, ldc, m,
                        n, kc, load_c);
        }
    }
}
#endif

}  // namespace dt::kernels::cpu::gemm_detail
