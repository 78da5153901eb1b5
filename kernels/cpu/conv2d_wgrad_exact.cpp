// SPDX-License-Identifier: MIT
// conv.wgrad, exact mode, on small maps (recipe in kernels/conv2d.h: the exact sum of the N
// per-sample leaves, rounded once). The general path (conv2d_wgrad_modes.cpp) computes each
// sample's leaf (Co, RL) with a GEMM of K = P, writes a wave of them to memory and reads them
// back into one ExactAcc per element. On small maps that is the whole cost: with K = 1..64 the
// GEMMs are thin, the leaves are as large as the weight (MB per wave) and the accumulators
// (80 bytes per element) stream through memory once per wave.
// Here the weight gradient is cut into tiles of kTileO output channels x kTileI live rows, spread
// across threads. A tile computes the leaves of all N samples into a buffer that stays in cache
// (the per-sample leaf's own fma chain over q, so the same bits as the GEMM) and sums each
// element's N leaves exactly (exact_sum_rows: one int64 sum and one rounding; an ExactAcc only
// for elements with outlier leaves, Inf/NaN or a result outside the normal range). Nothing but
// the transposed im2col of the batch and dw itself is touched in memory.
// ORDER: none across samples (integer accumulation: the result depends only on the multiset of
// leaves, as on the general path, so both paths give the same bits; tests compare them).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/cpu/conv2d_internal.h"
#include "kernels/exact_rows.h"
#include "kernels/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dt::kernels::cpu::conv2d_internal {

namespace {

constexpr int64_t kTileO = 8;     // output channels per tile
constexpr int64_t kTileI = 128;   // live rows per tile (N x 8 x 128 leaves: 256 KB at N = 64)
constexpr int64_t kMaxP = 64;     // positions per sample up to which the tiled path is taken
constexpr int64_t kMaxCol = int64_t{1} << 24;  // floats of the batch's transposed im2col

// tile_leaves<isa, R>: out[ol * kTileI + i] (ol < R, i < ti) = the leaf of one sample at
// (o0 + ol, i0 + i): the fma chain from +0 over q ascending of dy_s[o, q] * colt[q, i] (the GEMM
// leaf's ORDER). Lanes run over i, R rows share each colt load. fma is exactly rounded, so every
// ISA path gives the same bits; the path follows gemm_isa() (DT_ISA / --isa force it).

template <int R>
void tile_leaves_scalar(const float* d, const float* colt, int64_t P, int64_t RL, int64_t i0,
                        int64_t ti, float* out) {
    for (int r = 0; r < R; ++r) {
        float* o = out + r * kTileI;
        for (int64_t i = 0; i < ti; ++i) {
            float acc = 0.0f;
            for (int64_t q = 0; q < P; ++q)  // ORDER: q ascending, one fma each
                acc = std::fma(d[r * P + q], colt[q * RL + i0 + i], acc);
            o[i] = acc;
        }
    }
}

#if defined(__x86_64__)
template <int R>
__attribute__((target("avx2,fma"))) void tile_leaves_avx2(const float* d, const float* colt,
                                                          int64_t P, int64_t RL, int64_t i0,
                                                          int64_t ti, float* out) {
    int64_t i = 0;
    for (; i + 8 <= ti; i += 8) {
        __m256 acc[R];
        for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
        for (int64_t q = 0; q < P; ++q) {  // ORDER: q ascending, one fma each
            const __m256 c = _mm256_loadu_ps(colt + q * RL + i0 + i);
            for (int r = 0; r < R; ++r)
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d[r * P + q]), c, acc[r]);
        }
        for (int r = 0; r < R; ++r) _mm256_storeu_ps(out + r * kTileI + i, acc[r]);
    }
    if (i < ti) {
        float tail[R * kTileI];
        tile_leaves_scalar<R>(d, colt, P, RL, i0 + i, ti - i, tail);
        for (int r = 0; r < R; ++r)
            for (int64_t u = 0; u < ti - i; ++u) out[r * kTileI + i + u] = tail[r * kTileI + u];
    }
}

template <int R>
__attribute__((target("avx512f"))) void tile_leaves_avx512(const float* d, const float* colt,
                                                           int64_t P, int64_t RL, int64_t i0,
                                                           int64_t ti, float* out) {
    // 32 lanes (two vectors) x R rows: 2R independent fma chains per q.
    const auto mask = [](int64_t left) {
        if (left <= 0) return __mmask16(0);
        return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
    };
    for (int64_t i = 0; i < ti; i += 32) {
        const __mmask16 m0 = mask(ti - i), m1 = mask(ti - i - 16);
        __m512 a0[R], a1[R];
        for (int r = 0; r < R; ++r) a0[r] = _mm512_setzero_ps(), a1[r] = _mm512_setzero_ps();
        for (int64_t q = 0; q < P; ++q) {  // ORDER: q ascending, one fma each
            const float* c = colt + q * RL + i0 + i;
            const __m512 c0 = _mm512_maskz_loadu_ps(m0, c);
            const __m512 c1 = _mm512_maskz_loadu_ps(m1, c + 16);
            for (int r = 0; r < R; ++r) {
                const __m512 dv = _mm512_set1_ps(d[r * P + q]);
                a0[r] = _mm512_fmadd_ps(dv, c0, a0[r]);
                a1[r] = _mm512_fmadd_ps(dv, c1, a1[r]);
            }
        }
        for (int r = 0; r < R; ++r) {
            _mm512_mask_storeu_ps(out + r * kTileI + i, m0, a0[r]);
            _mm512_mask_storeu_ps(out + r * kTileI + i + 16, m1, a1[r]);
        }
    }
}
#endif

template <int R>
void tile_leaves_rows(CpuIsa isa, const float* d, const float* colt, int64_t P, int64_t RL,
                      int64_t i0, int64_t ti, float* out) {
#if defined(__x86_64__)
    if (isa == CpuIsa::kAvx512) return tile_leaves_avx512<R>(d, colt, P, RL, i0, ti, out);
    if (isa == CpuIsa::kAvx2) return tile_leaves_avx2<R>(d, colt, P, RL, i0, ti, out);
#endif
    tile_leaves_scalar<R>(d, colt, P, RL, i0, ti, out);
}

/// The leaves of rows o0 .. o0 + to of one sample (dy_rows = dy_s + o0 * P).
void tile_leaves(CpuIsa isa, const float* dy_rows, const float* colt, int64_t P, int64_t RL,
                 int64_t to, int64_t i0, int64_t ti, float* out) {
    if (to == kTileO) return tile_leaves_rows<kTileO>(isa, dy_rows, colt, P, RL, i0, ti, out);
    for (int64_t r = 0; r < to; ++r)
        tile_leaves_rows<1>(isa, dy_rows + r * P, colt, P, RL, i0, ti, out + r * kTileI);
}

}  // namespace

bool conv2d_wgrad_exact_tiled(const float* x, const float* dy, float* dw, const Geometry& g) {
    const Conv2dParams& p = *g.p;
    const int64_t P = g.P, RL = g.RL;
    if (P > kMaxP || p.n * P * RL > kMaxCol || RL == 0) return false;
    thread_local std::vector<float> t_colt;
    float* colt = scratch(t_colt, p.n * P * RL);
    im2col_transposed_chunk(x, 0, p.n, g, colt);  // colt (N*P, RL)

    if (!g.all_live()) std::fill(dw, dw + p.co * g.R, 0.0f);
    const CpuIsa isa = gemm_isa();
    // Live rows in equal spans (multiples of 32 lanes, at most kTileI): SmallCNN's 288 rows as
    // 3 x 96, not 128 + 128 + 32, which left one thread with half the work of the other.
    const int64_t tiles_o = (p.co + kTileO - 1) / kTileO;
    const int64_t spans = (RL + kTileI - 1) / kTileI;
    const int64_t span = ((RL + spans - 1) / spans + 31) / 32 * 32;
    const int64_t tiles = tiles_o * ((RL + span - 1) / span);
#pragma omp parallel for schedule(static) if (tiles > 1 && !omp_in_parallel())
    for (int64_t t = 0; t < tiles; ++t) {
        // Consecutive tiles share their live rows: the batch's colt slice stays in L2.
        const int64_t o0 = (t % tiles_o) * kTileO, i0 = (t / tiles_o) * span;
        const int64_t to = std::min(kTileO, p.co - o0), ti = std::min(span, RL - i0);
        // Samples kTile + 16 floats apart: at a multiple of 4 KB every sample's leaf would map
        // to the same L1 sets, and the column sums below walk down all N of them.
        constexpr int64_t kTile = kTileO * kTileI + 16;
        thread_local std::vector<float> t_leaves;  // (N, kTileO, kTileI) + padding: L2-sized
        float* leaves = scratch(t_leaves, p.n * kTile);
        for (int64_t s = 0; s < p.n; ++s)
            tile_leaves(isa, dy + (s * p.co + o0) * P, colt + s * P * RL, P, RL, to, i0, ti,
                        leaves + s * kTile);
        float sums[kTileI];
        for (int64_t ol = 0; ol < to; ++ol) {
            // ORDER: none (integer accumulation, see the top of this file).
            exact_sum_rows(sums, leaves + ol * kTileI, kTile, p.n, ti);
            for (int64_t i = 0; i < ti; ++i) dw[(o0 + ol) * g.R + g.live[i0 + i]] = sums[i];
        }
    }
    return true;
}

}  // namespace dt::kernels::cpu::conv2d_internal
