// SPDX-License-Identifier: MIT
// conv.wgrad in the exact mode on small maps, in cache-sized tiles (recipe in kernels/conv2d.h:
// the exact sum of the N per-sample leaves, rounded once). The general path
// (conv2d_wgrad_modes.cpp) writes waves of GEMM leaves (Co, RL), K = P, to memory and reads them
// back into one ExactAcc per element: with K = 1..64 the GEMMs are thin, the leaves as large as
// the weight (MB per wave) and the accumulators (80 bytes per element) stream through memory
// once per wave. Here dw is cut into tiles of output channels x live rows (tile_shape) across
// threads; a tile computes the leaves of all N samples into a buffer that stays in cache (the
// per-sample leaf's own fma chain over q: the GEMM's bits) and sums each element's N leaves
// exactly (exact_sum_rows; a part of a split batch adds them to its exact_out accumulators
// instead, exact_add_rows). Only the batch's transposed im2col and dw are touched in memory.
// ORDER: none across samples (integer accumulation, as on the general path: the same bits).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/exact_rows.h"
#include "kernels/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dt::kernels::cpu::conv2d_internal {

namespace {

constexpr int64_t kGroupO = 8;     // output channels sharing each colt load (register rows)
constexpr int64_t kMaxRows = 64;   // output channels per tile, at most
constexpr int64_t kMaxSpan = 128;  // live rows per tile, at most
constexpr int64_t kMaxP = 64;      // positions per sample up to which the tiled path is taken
constexpr int64_t kMaxCol = int64_t{1} << 25;  // floats of the batch's transposed im2col
// L2 budgets per thread (floats): a tile's leaves (N x rows x span) and the batch's colt slice it
// reads (N x P x span), which the next tiles (same live rows, the next output channels) reuse.
constexpr int64_t kLeafBudget = int64_t{1} << 17;  // 512 KB
constexpr int64_t kColtBudget = int64_t{1} << 18;  // 1 MB

struct TileShape {
    int64_t rows;  // output channels per tile: a multiple of kGroupO, <= kMaxRows
    int64_t span;  // live rows per tile: a multiple of 32 lanes, <= kMaxSpan
};

/// The tile's live rows first: as many as keep the colt slice in the budget (ResNet stage 3 at
/// batch 128, N x P = 8192: 32; with a full kMaxSpan slice of 4 MB every tile streamed it from
/// L3), cut into equal spans (SmallCNN's 288 rows as 3 x 96, not 128 + 128 + 32, which left one
/// thread with half the work of the other). Then as many output channels as keep the leaves in
/// theirs: fewer live rows per tile mean more channels, so each colt load still serves many.
TileShape tile_shape(int64_t n, int64_t P, int64_t co, int64_t RL) {
    const int64_t max_span = std::clamp(kColtBudget / (n * P) / 32 * 32, int64_t{32}, kMaxSpan);
    const int64_t spans = (RL + max_span - 1) / max_span;
    const int64_t span = ((RL + spans - 1) / spans + 31) / 32 * 32;
    const int64_t co8 = (co + kGroupO - 1) / kGroupO * kGroupO;
    const int64_t rows =
        std::clamp(kLeafBudget / (n * span) / kGroupO * kGroupO, kGroupO, std::min(kMaxRows, co8));
    return {rows, span};
}

// tile_leaves<isa, R>: out[ol * ld + i] (ol < R, i < ti) = the leaf of one sample at
// (o0 + ol, i0 + i): the fma chain from +0 over q ascending of dy_s[o, q] * colt[q * ldc + i]
// (the GEMM leaf's ORDER). Lanes run over i, R rows share each colt load. fma is exactly rounded,
// so every ISA path gives the same bits; the path follows cpu_isa() (DT_ISA / --isa force it).

template <int R>
void tile_leaves_scalar(const float* d, const float* colt, int64_t P, int64_t ldc, int64_t i0,
                        int64_t ti, int64_t ld, float* out) {
    for (int r = 0; r < R; ++r) {
        float* o = out + r * ld;
        for (int64_t i = 0; i < ti; ++i) {
            float acc = 0.0f;
            for (int64_t q = 0; q < P; ++q)  // ORDER: q ascending, one fma each
                acc = std::fma(d[r * P + q], colt[q * ldc + i0 + i], acc);
            o[i] = acc;
        }
    }
}

#if defined(__x86_64__)
template <int R>
__attribute__((target("avx2,fma"))) void tile_leaves_avx2(const float* d, const float* colt,
                                                          int64_t P, int64_t ldc, int64_t i0,
                                                          int64_t ti, int64_t ld, float* out) {
    int64_t i = 0;
    for (; i + 8 <= ti; i += 8) {
        __m256 acc[R];
        for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
        for (int64_t q = 0; q < P; ++q) {  // ORDER: q ascending, one fma each
            const __m256 c = _mm256_loadu_ps(colt + q * ldc + i0 + i);
            for (int r = 0; r < R; ++r)
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d[r * P + q]), c, acc[r]);
        }
        for (int r = 0; r < R; ++r) _mm256_storeu_ps(out + r * ld + i, acc[r]);
    }
    if (i < ti) {
        tile_leaves_scalar<R>(d, colt, P, ldc, i0 + i, ti - i, ld, out + i);
    }
}

/// 32 lanes (two vectors, lanes past m0/m1 zero) x R rows: 2R independent fma chains per q.
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void leaves32_avx512(
    const float* d, const float* c, int64_t P, int64_t ldc, __mmask16 m0, __mmask16 m1, int64_t ld,
    float* out) {
    __m512 a0[R], a1[R];
    for (int r = 0; r < R; ++r) a0[r] = _mm512_setzero_ps(), a1[r] = _mm512_setzero_ps();
    for (int64_t q = 0; q < P; ++q, c += ldc) {  // ORDER: q ascending, one fma each
        const __m512 c0 = _mm512_maskz_loadu_ps(m0, c);
        const __m512 c1 = _mm512_maskz_loadu_ps(m1, c + 16);
        for (int r = 0; r < R; ++r) {
            const __m512 dv = _mm512_set1_ps(d[r * P + q]);
            a0[r] = _mm512_fmadd_ps(dv, c0, a0[r]);
            a1[r] = _mm512_fmadd_ps(dv, c1, a1[r]);
        }
    }
    for (int r = 0; r < R; ++r) {
        _mm512_mask_storeu_ps(out + r * ld, m0, a0[r]);
        _mm512_mask_storeu_ps(out + r * ld + 16, m1, a1[r]);
    }
}

template <int R>
__attribute__((target("avx512f"))) void tile_leaves_avx512(const float* d, const float* colt,
                                                           int64_t P, int64_t ldc, int64_t i0,
                                                           int64_t ti, int64_t ld, float* out) {
    const auto mask = [](int64_t left) {
        if (left <= 0) return __mmask16(0);
        return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
    };
    int64_t i = 0;
    for (; i + 32 <= ti; i += 32)  // constant masks: the compiler drops them
        leaves32_avx512<R>(d, colt + i0 + i, P, ldc, 0xffff, 0xffff, ld, out + i);
    if (i < ti)
        leaves32_avx512<R>(d, colt + i0 + i, P, ldc, mask(ti - i), mask(ti - i - 16), ld, out + i);
}
#endif

template <int R>
void tile_leaves_rows(CpuIsa isa, const float* d, const float* colt, int64_t P, int64_t ldc,
                      int64_t i0, int64_t ti, int64_t ld, float* out) {
#if defined(__x86_64__)
    if (isa == CpuIsa::kAvx512) return tile_leaves_avx512<R>(d, colt, P, ldc, i0, ti, ld, out);
    if (isa == CpuIsa::kAvx2) return tile_leaves_avx2<R>(d, colt, P, ldc, i0, ti, ld, out);
#endif
    tile_leaves_scalar<R>(d, colt, P, ldc, i0, ti, ld, out);
}

/// The leaves of rows o0 .. o0 + to of one sample (dy_rows = dy_s + o0 * P).
void tile_leaves(CpuIsa isa, const float* dy_rows, const float* colt, int64_t P, int64_t ldc,
                 int64_t to, int64_t i0, int64_t ti, int64_t ld, float* out) {
    if (to == kGroupO)
        return tile_leaves_rows<kGroupO>(isa, dy_rows, colt, P, ldc, i0, ti, ld, out);
    for (int64_t r = 0; r < to; ++r)
        tile_leaves_rows<1>(isa, dy_rows + r * P, colt, P, ldc, i0, ti, ld, out + r * ld);
}

}  // namespace

bool conv2d_wgrad_exact_tiled(const float* x, const float* dy, float* dw, const Geometry& g) {
    const Conv2dParams& p = *g.p;
    const int64_t P = g.P, RL = g.RL;
    if (P > kMaxP || p.n * P * RL > kMaxCol || p.n * P * RL == 0) return false;
    const TileShape ts = tile_shape(p.n, P, p.co, RL);
    const int64_t spans = (RL + ts.span - 1) / ts.span;
    thread_local std::vector<float> t_colt;
    float* colt = scratch(t_colt, spans * p.n * P * ts.span);
    // colt in blocks of a tile's live rows, (N*P, span) each: a tile reads one contiguous block.
    // (As one (N*P, RL) matrix, its slice was N*P lines RL floats apart, a new page per line:
    // the prefetchers gave up and the leaves waited on L2/L3 at ResNet stage 3.)
    im2col_transposed_blocks(x, g, ts.span, colt);

    if (!g.all_live() && p.exact_out == nullptr) std::fill(dw, dw + p.co * g.R, 0.0f);
    const CpuIsa isa = cpu_isa();
    const int64_t tiles_o = (p.co + ts.rows - 1) / ts.rows;
    const int64_t tiles = tiles_o * spans;
    // Samples' leaves kTile floats apart, kTile = 16 (mod 1024): at a multiple of 4 KB every
    // sample's leaf would map to the same L1 sets, and the column sums below walk down all N.
    const int64_t kTile = ts.rows * ts.span + 16;
#pragma omp parallel for schedule(static) if (tiles > 1 && !omp_in_parallel())
    for (int64_t t = 0; t < tiles; ++t) {
        // Consecutive tiles share their live rows: the batch's colt slice stays in L2.
        const int64_t o0 = (t % tiles_o) * ts.rows, i0 = (t / tiles_o) * ts.span;
        const int64_t to = std::min(ts.rows, p.co - o0), ti = std::min(ts.span, RL - i0);
        thread_local std::vector<float> t_leaves;  // (N, rows, span) + padding: L2-sized
        float* leaves = scratch(t_leaves, p.n * kTile);
        const float* block = colt + (i0 / ts.span) * p.n * P * ts.span;
        for (int64_t s = 0; s < p.n; ++s)
            for (int64_t og = 0; og < to; og += kGroupO)  // 8 rows share each colt load
                tile_leaves(isa, dy + (s * p.co + o0 + og) * P, block + s * P * ts.span, P, ts.span,
                            std::min(kGroupO, to - og), 0, ti, ts.span,
                            leaves + s * kTile + og * ts.span);
        float sums[kMaxSpan];
        common::ExactAcc accs[kMaxSpan];
        for (int64_t ol = 0; ol < to; ++ol) {
            // ORDER: none (integer accumulation: the result depends only on the multiset of
            // leaves, as on the general path; tests compare the two). exact_sum_rows: one int64
            // sum and one rounding; an ExactAcc only for elements with outlier leaves, Inf/NaN
            // or a result outside the normal range. A part of a batch (exact_out) adds the
            // unrounded sums to the caller's accumulators instead (dw's layout).
            if (p.exact_out != nullptr) {
                if (g.all_live()) {  // dw's row is contiguous: straight into the caller's
                    exact_add_rows(p.exact_out + (o0 + ol) * g.R + i0, leaves + ol * ts.span, kTile,
                                   p.n, ti);
                    continue;
                }
                common::exact_init_row(accs, ti);
                exact_add_rows(accs, leaves + ol * ts.span, kTile, p.n, ti);
                for (int64_t i = 0; i < ti; ++i)
                    common::exact_merge(p.exact_out[(o0 + ol) * g.R + g.live[i0 + i]], accs[i]);
                continue;
            }
            exact_sum_rows(sums, leaves + ol * ts.span, kTile, p.n, ti);
            for (int64_t i = 0; i < ti; ++i) dw[(o0 + ol) * g.R + g.live[i0 + i]] = sums[i];
        }
    }
    return true;
}

}  // namespace dt::kernels::cpu::conv2d_internal
