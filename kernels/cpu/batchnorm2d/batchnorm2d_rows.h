// SPDX-License-Identifier: MIT
// Private to kernels/cpu/batchnorm2d/batchnorm2d.cpp: the per-(n, c) row sums of sites bn.stats and
// bn.backward (tree, permuted and atomic leaves as plain float chains; kahan leaves) and the
// terms of the three sums, one functor per row. Recipe and ORDER in kernels/batchnorm2d.h.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/cpu/transpose_avx512.h"
#include "kernels/cpu_isa.h"

namespace dt::kernels::cpu::batchnorm2d_rows {

using common::KahanSum;

// Terms. make_row(r) returns the functor of row r = n * C + c (pointers and channel constants
// resolved once per row); row(i, t) writes t_s(r, i) for s < S (the functors at the end).

constexpr int64_t kRowBlock = 8;         // rows summed side by side (ILP only, not order)
constexpr int64_t kParallelMin = 32768;  // elements below which one thread is faster

// Terms. make_row(r) returns the functor of row r = n * C + c (pointers and channel constants
// resolved once per row); row(i, t) writes t_s(r, i) for s < S. Defined with the kernels below.

// Row accumulators: PlainAcc is the float leaf of tree/atomic/permuted (acc = acc + t). Starts
// at +0.
struct PlainAcc {
    float v = 0.0f;
    void add(float t) { v = v + t; }
};

// ORDER: for every row r and sum s, acc(r, s) adds t_s(r, 0), t_s(r, 1), ..., t_s(r, len - 1) in
// index order, each row in its own accumulator; kRowBlock rows advance together only to hide add
// latency. emit(r, acc) receives the row's S finished accumulators (from the owning thread).
/// One row's leaves alone (the rows past the last full block).
template <int S, typename Row, typename Emit>
void one_row_leaf(const Row& row, int64_t r, int64_t len, Emit& emit) {
    PlainAcc acc[S] = {};
    for (int64_t i = 0; i < len; ++i) {
        float t[S];
        row(i, t);
        for (int s = 0; s < S; ++s) acc[s].add(t[s]);
    }
    emit(r, acc);
}

#if defined(__x86_64__)
/// Rows r0 .. r0 + 15 in the 16 lanes of a vector: lane l carries row r0 + l and performs
/// exactly its scalar adds (the same IEEE operations, in index order), so the bits are the
/// scalar loop's. Row::terms16 gives, per block of up to 16 positions, one vector of terms per
/// position (its rows' 16 x 16 blocks transposed in registers): each add advances 16 rows.
template <int S, typename Row, typename Emit>
__attribute__((target("avx512f"))) void row_leaves16(const Row* row, int64_t r0, int64_t len,
                                                     Emit& emit) {
    __m512 acc[S];
    for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
    for (int64_t i0 = 0; i0 < len; i0 += 16) {
        const int64_t n = std::min<int64_t>(16, len - i0);
        __m512 t[S][16];
        Row::terms16(row, i0, n, t);
        for (int64_t k = 0; k < n; ++k)  // ORDER: positions ascending, per lane (row)
            for (int s = 0; s < S; ++s) acc[s] = _mm512_add_ps(acc[s], t[s][k]);
    }
    alignas(64) float sums[S][16];
    for (int s = 0; s < S; ++s) _mm512_store_ps(sums[s], acc[s]);
    for (int l = 0; l < 16; ++l) {
        PlainAcc a[S];
        for (int s = 0; s < S; ++s) a[s].v = sums[s][l];
        emit(r0 + l, a);
    }
}
#endif

template <int S, typename MakeRow, typename Emit>
void row_leaves(int64_t rows, int64_t len, MakeRow make_row, Emit emit) {
    using Row = decltype(make_row(int64_t{0}));
#if defined(__x86_64__)
    if (cpu_isa() == CpuIsa::kAvx512 && len > 1) {  // the path in force (tests force each one)
        const int64_t groups = rows / 16;
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
        for (int64_t gr = 0; gr < groups; ++gr) {
            Row row[16];
            for (int l = 0; l < 16; ++l) row[l] = make_row(gr * 16 + l);
            row_leaves16<S>(row, gr * 16, len, emit);
        }
        for (int64_t r = groups * 16; r < rows; ++r) one_row_leaf<S>(make_row(r), r, len, emit);
        return;
    }
#endif
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t r0 = b * kRowBlock;
        if (r0 + kRowBlock <= rows) {
            const Row row[kRowBlock] = {make_row(r0),     make_row(r0 + 1), make_row(r0 + 2),
                                        make_row(r0 + 3), make_row(r0 + 4), make_row(r0 + 5),
                                        make_row(r0 + 6), make_row(r0 + 7)};
            PlainAcc acc[kRowBlock][S] = {};
            for (int64_t i = 0; i < len; ++i) {
                for (int64_t j = 0; j < kRowBlock; ++j) {
                    float t[S];
                    row[j](i, t);
                    for (int s = 0; s < S; ++s) acc[j][s].add(t[s]);
                }
            }
            for (int64_t j = 0; j < kRowBlock; ++j) emit(r0 + j, acc[j]);
        } else {
            for (int64_t r = r0; r < rows; ++r) one_row_leaf<S>(make_row(r), r, len, emit);
        }
    }
}

// Float leaves: leaves[r * S + s] = row sum of t_s over row r (r = n * C + c).
template <int S, typename MakeRow>
std::vector<float> float_leaves(const BatchNorm2dParams& p, MakeRow make_row) {
    std::vector<float> leaves(static_cast<std::size_t>(p.N * p.C * S));
    float* l = leaves.data();
    row_leaves<S>(p.N * p.C, p.HW, make_row, [l](int64_t r, const PlainAcc* acc) {
        for (int s = 0; s < S; ++s) l[r * S + s] = acc[s].v;
    });
    return leaves;
}

// kKahan leaves: leaves[r * S + s] = kahan_add of t_s(r, 0), t_s(r, 1), ... from (+0, +0).
// Vectorised across rows: lane j of a 4-float vector carries row r0 + j and sees exactly the
// scalar kahan_add sequence of that row (same IEEE operations, no contraction), so the bits equal
// the scalar recipe; rows past the last group of four take the scalar kahan_add.
typedef float KVec __attribute__((vector_size(16)));

template <int S, typename MakeRow>
std::vector<KahanSum> kahan_leaves(const BatchNorm2dParams& p, MakeRow make_row) {
    using Row = decltype(make_row(int64_t{0}));
    const int64_t rows = p.N * p.C, len = p.HW, groups = (rows + 3) / 4;
    std::vector<KahanSum> leaves(static_cast<std::size_t>(rows * S));
    KahanSum* l = leaves.data();
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
    for (int64_t g = 0; g < groups; ++g) {
        const int64_t r0 = g * 4;
        if (r0 + 4 > rows) {
            for (int64_t r = r0; r < rows; ++r) {
                const Row row = make_row(r);
                KahanSum k[S];
                for (int s = 0; s < S; ++s) k[s] = common::kahan_zero();
                for (int64_t i = 0; i < len; ++i) {
                    float t[S];
                    row(i, t);
                    for (int s = 0; s < S; ++s) common::kahan_add(k[s], t[s]);
                }
                for (int s = 0; s < S; ++s) l[r * S + s] = k[s];
            }
            continue;
        }
        const Row row[4] = {make_row(r0), make_row(r0 + 1), make_row(r0 + 2), make_row(r0 + 3)};
        KVec sum[S] = {}, comp[S] = {};
        for (int64_t i = 0; i < len; ++i) {
            float t[4][S];
            for (int j = 0; j < 4; ++j) row[j](i, t[j]);
            for (int s = 0; s < S; ++s) {
                // ORDER: kahan_add per lane: t = sum + x; err = two_sum_err(sum, x, t);
                // comp = comp + err; sum = t (accum_kahan.h).
                const KVec x = {t[0][s], t[1][s], t[2][s], t[3][s]};
                const KVec tt = sum[s] + x;
                const KVec bp = tt - sum[s];
                const KVec ap = tt - bp;
                comp[s] = comp[s] + ((sum[s] - ap) + (x - bp));
                sum[s] = tt;
            }
        }
        for (int j = 0; j < 4; ++j)
            for (int s = 0; s < S; ++s) l[(r0 + j) * S + s] = KahanSum{sum[s][j], comp[s][j]};
    }
    return leaves;
}

// The terms of the three sums (kernels/batchnorm2d.h), one functor per row. terms16 (AVX-512):
// the same terms for 16 rows at positions i0 .. i0 + n - 1, t[s][k] lane l = row l's term s at
// i0 + k, the same operations lane by lane.
#if defined(__x86_64__)
/// v[k] lane l = p[l][i0 + k] for k < n (the rows' blocks loaded, then transposed).
__attribute__((target("avx512f"))) inline void load16(const float* const* p, int64_t i0, int64_t n,
                                                      __m512 v[16]) {
    const auto m = static_cast<__mmask16>((1u << n) - 1u);
    for (int l = 0; l < 16; ++l) v[l] = _mm512_maskz_loadu_ps(m, p[l] + i0);
    transpose16x16(v);
}
#endif
struct MeanRow {  // t = x
    const float* x;
    void operator()(int64_t i, float* t) const { t[0] = x[i]; }
#if defined(__x86_64__)
    __attribute__((target("avx512f"))) static void terms16(const MeanRow* r, int64_t i0, int64_t n,
                                                           __m512 t[1][16]) {
        const float* p[16];
        for (int l = 0; l < 16; ++l) p[l] = r[l].x;
        load16(p, i0, n, t[0]);
    }
#endif
};
struct VarRow {  // t = (x - mean) * (x - mean)
    const float* x;
    float m;
    void operator()(int64_t i, float* t) const {
        const float d = x[i] - m;
        t[0] = d * d;
    }
#if defined(__x86_64__)
    __attribute__((target("avx512f"))) static void terms16(const VarRow* r, int64_t i0, int64_t n,
                                                           __m512 t[1][16]) {
        const float* p[16];
        alignas(64) float m[16];
        for (int l = 0; l < 16; ++l) p[l] = r[l].x, m[l] = r[l].m;
        load16(p, i0, n, t[0]);
        const __m512 mv = _mm512_load_ps(m);
        for (int k = 0; k < 16; ++k) {
            const __m512 d = _mm512_sub_ps(t[0][k], mv);
            t[0][k] = _mm512_mul_ps(d, d);
        }
    }
#endif
};
struct BackwardRow {  // t0 = dy, t1 = dy * ((x - mean) * invstd)
    const float* x;
    const float* dy;
    float m, is;
    void operator()(int64_t i, float* t) const {
        const float g = dy[i];
        t[0] = g;
        t[1] = g * ((x[i] - m) * is);
    }
#if defined(__x86_64__)
    __attribute__((target("avx512f"))) static void terms16(const BackwardRow* r, int64_t i0,
                                                           int64_t n, __m512 t[2][16]) {
        const float *px[16], *pd[16];
        alignas(64) float m[16], is[16];
        for (int l = 0; l < 16; ++l)
            px[l] = r[l].x, pd[l] = r[l].dy, m[l] = r[l].m, is[l] = r[l].is;
        __m512 xv[16];
        load16(px, i0, n, xv);
        load16(pd, i0, n, t[0]);
        const __m512 mv = _mm512_load_ps(m), iv = _mm512_load_ps(is);
        for (int k = 0; k < 16; ++k)
            t[1][k] = _mm512_mul_ps(t[0][k], _mm512_mul_ps(_mm512_sub_ps(xv[k], mv), iv));
    }
#endif
};

}  // namespace dt::kernels::cpu::batchnorm2d_rows
