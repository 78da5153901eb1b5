// SPDX-License-Identifier: MIT
// The register-tile microkernels of cpu::gemm (private to kernels/cpu/gemm/): the views of a B
// panel's rows (read in place, packed, panels side by side), and one struct per ISA path
// (KernelScalar, KernelAvx2, KernelAvx512) with its tile height kMr, panel width kNr and
// ukr<W, ROWS> (a half-width W = kNr/2 serves narrow last panels, shorter ROWS short last row
// tiles; on AVX-512 narrow panels take a kernel vectorised over rows, whole panels a wide tile).
// ORDER (kernels/gemm.h, gemm_f32_k_fma): every path evaluates one correctly rounded fused
// multiply-add per term (std::fma, _mm256_fmadd_ps, _mm512_fmadd_ps) in k order, so all agree
// bitwise; -ffp-contract=off keeps the compiler from fusing anything else.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/transpose_avx512.h"
#define DT_GEMM_X86 1
#endif

namespace dt::kernels::cpu::gemm_detail {

// ---- B panel rows ----
// b(k) is row k of the tile's B; a tile several vectors wide reads vector v of it at
// b(k) + v * b.vstep().
/// B read in place: row k of the panel at rows[k] + off.
struct BRowTable {
    const float* const* rows;
    int64_t off;
    const float* operator()(int64_t k) const { return rows[k] + off; }
    static constexpr int64_t vstep() { return 16; }
};
/// A packed panel: row k at base + k * step (a multiply-add, no table load per step).
struct BPacked {
    const float* base;
    int64_t step;
    const float* operator()(int64_t k) const { return base + k * step; }
    static constexpr int64_t vstep() { return 16; }
};
/// Packed 16-column panels side by side (one vector each): row k of panel v at
/// base + v * panel + k * 16.
struct BPanels {
    const float* base;
    int64_t panel;
    const float* operator()(int64_t k) const { return base + k * 16; }
    int64_t vstep() const { return panel; }
};

// ---- microkernels ----
// ukr<W, ROWS>(kc, ap, b, c, ldc, mr, nr, load_c): the C tile (ROWS <= MR, W) at c with row
// stride ldc, of which only rows < mr <= ROWS and columns < nr exist (edge tiles: those are the
// only ones read or written; the rest is computed from zero padding and dropped).
// ap: MR x kc packed k-major (element (i, k) at ap[k*MR + i], MR = the kernel's kMr); B row k
// is b(k) (W floats: a packed panel row, BPacked, or B itself read in place, BRowTable).
// ORDER: acc = load_c ? C : +0; for k ascending: acc = fma(a, b, acc).

struct KernelScalar {
    static constexpr int64_t kMr = 4, kNr = 8;
    static constexpr int64_t kWidePanels = 1;  // no wide in-place tile (see KernelAvx512)
    template <int W, int ROWS, class B>
    static void ukr(int64_t kc, const float* ap, const B& b, float* c, int64_t ldc, int64_t mr,
                    int64_t nr, bool load_c) {
        float acc[ROWS][W] = {};
        if (load_c)
            for (int64_t i = 0; i < mr; ++i)
                for (int64_t j = 0; j < nr; ++j) acc[i][j] = c[i * ldc + j];
        for (int64_t k = 0; k < kc; ++k) {
            const float* bk = b(k);
            for (int i = 0; i < ROWS; ++i) {
                const float av = ap[k * kMr + i];
                for (int j = 0; j < W; ++j) acc[i][j] = std::fma(av, bk[j], acc[i][j]);  // ORDER
            }
        }
        for (int64_t i = 0; i < mr; ++i)
            for (int64_t j = 0; j < nr; ++j) c[i * ldc + j] = acc[i][j];
    }
};

#if DT_GEMM_X86
/// A 16-lane mask of the lanes [0, n) (n clamped to 0..16).
inline __mmask16 lanes_below(int64_t n) {
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

template <int NV, int kRows, int kStride, class B>
__attribute__((target("avx2,fma"))) void ukr_avx2(int64_t kc, const float* ap, const B& b,
                                              float* c, int64_t ldc, int64_t mr, int64_t nr,
                                              bool load_c) {
    __m256i mask[NV];  // lane j of vector v exists iff 8v + j < nr
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int v = 0; v < NV; ++v)
        mask[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nr) - 8 * v), lane);
    __m256 acc[kRows][NV];
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[i][v] = load_c && i < mr ? _mm256_maskload_ps(c + i * ldc + 8 * v, mask[v])
                                         : _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; ++k) {
        __m256 bv[NV];
        const float* bk = b(k);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(bk + 8 * v);
#pragma GCC unroll 16
        for (int i = 0; i < kRows; ++i) {
            const __m256 av = _mm256_broadcast_ss(ap + k * kStride + i);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)  // ORDER: one fused multiply-add
                acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            if (i < mr) _mm256_maskstore_ps(c + i * ldc + 8 * v, mask[v], acc[i][v]);
}

template <int NV, int kRows, int kStride, class B>
__attribute__((target("avx512f"))) void ukr_avx512(int64_t kc, const float* ap, const B& b,
                                                   float* c, int64_t ldc, int64_t mr, int64_t nr,
                                                   bool load_c) {
    __mmask16 mask[NV];  // lane j of vector v exists iff 16v + j < nr
    for (int v = 0; v < NV; ++v) mask[v] = lanes_below(nr - 16 * v);
    __m512 acc[kRows][NV];
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[i][v] = load_c && i < mr ? _mm512_maskz_loadu_ps(mask[v], c + i * ldc + 16 * v)
                                         : _mm512_setzero_ps();
    // The next tile (kRows rows down) loads its C too: its lines are fetched meanwhile, one per
    // step over the first steps (a prefetch never faults, past C's end either). The C block of a
    // deep product is 512 KB, out of L1 when a K block comes back to it: without the prefetch
    // 1024 x 1024 x 1024 ran at 93 GFLOP/s against 102 for 1024 x 1024 x 256 (one K block). No
    // prefetch before a store: it measured slower on the small path.
    constexpr int kLines = NV + 1;  // a row of 16 NV floats spans up to NV + 1 lines
    const int64_t kpf = load_c ? std::min<int64_t>(kc, kRows * kLines) : 0;
    for (int64_t k = 0; k < kc; ++k) {
        if (k < kpf) {
            const int64_t r = k / kLines, part = k % kLines;
            _mm_prefetch(reinterpret_cast<const char*>(
                             c + (kRows + r) * ldc + std::min<int64_t>(16 * part, 16 * NV - 1)),
                         _MM_HINT_T0);
        }
        __m512 bv[NV];
        const float* bk = b(k);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(bk + v * b.vstep());
#pragma GCC unroll 16
        for (int i = 0; i < kRows; ++i) {
            const __m512 av = _mm512_set1_ps(ap[k * kStride + i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)  // ORDER: one fused multiply-add
                acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            if (i < mr) _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mask[v], acc[i][v]);
}

/// An A read as k-major columns of rows side by side: element (i, k) at data + k * step + i
/// (a packed micro-panel: step MR; A^T stored (K, M): step lda).
struct AdjacentA {
    const float* data;
    int64_t step;
};

/// 16 rows x NC <= 8 columns of C at c (row stride ldc) <-> col[j] = column j's 16 rows. A
/// row's columns move as one masked vector access to its lane (masked-off lanes are not
/// touched, so nothing past C's rows is read or written), columns in groups of 4 transposed in
/// registers (transpose_lanes4): 16 or 32 accesses instead of 16 NC scalar ones and a buffer.
template <int NC>
__attribute__((target("avx512f"), always_inline)) inline void store_cols(const __m512* col,
                                                                         float* c, int64_t ldc) {
#pragma GCC unroll 2
    for (int g = 0; g < (NC + 3) / 4; ++g) {
        __m512 x[4], y[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) x[j] = 4 * g + j < NC ? col[4 * g + j] : _mm512_setzero_ps();
        transpose_lanes4(x, y);
        const __mmask16 m = lanes_below(NC - 4 * g);
#pragma GCC unroll 4
        for (int l = 0; l < 4; ++l)
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q)  // row 4l + q, columns 4g.. at lane l of y[q]
                _mm512_mask_storeu_ps(c + (4 * l + q) * ldc + 4 * g - 4 * l,
                                      static_cast<__mmask16>((m & 0xF) << (4 * l)), y[q]);
    }
}
template <int NC>
__attribute__((target("avx512f"), always_inline)) inline void load_cols(const float* c,
                                                                        int64_t ldc, __m512* col) {
#pragma GCC unroll 2
    for (int g = 0; g < (NC + 3) / 4; ++g) {
        __m512 x[4], y[4];
        const __mmask16 m = lanes_below(NC - 4 * g);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
            y[q] = _mm512_setzero_ps();
#pragma GCC unroll 4
            for (int l = 0; l < 4; ++l)
                y[q] = _mm512_mask_loadu_ps(y[q], static_cast<__mmask16>((m & 0xF) << (4 * l)),
                                            c + (4 * l + q) * ldc + 4 * g - 4 * l);
        }
        transpose_lanes4(y, x);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j)
            if (4 * g + j < NC) col[4 * g + j] = x[j];
    }
}

/// A narrow right edge (NC <= 8 columns) on the AVX-512 path, vectorised over rows instead of
/// its few columns: RB blocks of up to 16 rows, block r's rows [0, mr_r) from a[r] (one masked
/// load per k), its C rows at c + 16 r ldc; B row k at b(k). NC fmas per k per block instead of
/// the 16 of a half-width row tile; RB = 3 keeps 3 NC independent fma chains in flight (one
/// block of NC = 4 waits on the fma latency). Each element is still one fma per k in k order
/// from the same start, so the bits are ukr_avx512's. C's columns of a whole block of 16 rows
/// move through registers (load_cols, store_cols), of a short block through a small buffer
/// (existing rows only).
template <int NC, int RB, class B>
__attribute__((target("avx512f"))) void ukr_avx512_cols(int64_t kc, const AdjacentA* a,
                                                        const B& b, float* c, int64_t ldc,
                                                        int64_t mr, bool load_c) {
    __mmask16 rows[RB];
    int64_t live[RB];
    const float* ar[RB];
    int64_t as[RB];
#pragma GCC unroll 3
    for (int r = 0; r < RB; ++r) {
        live[r] = std::clamp<int64_t>(mr - 16 * r, 0, 16);
        rows[r] = lanes_below(live[r]);
        ar[r] = a[r].data, as[r] = a[r].step;
    }
    alignas(64) float col[16] = {};
    __m512 acc[RB][NC];
#pragma GCC unroll 3
    for (int r = 0; r < RB; ++r) {
        if (load_c && live[r] == 16) {
            load_cols<NC>(c + 16 * r * ldc, ldc, acc[r]);
            continue;
        }
#pragma GCC unroll 8
        for (int j = 0; j < NC; ++j) {
            if (load_c) {
                for (int64_t i = 0; i < live[r]; ++i) col[i] = c[(16 * r + i) * ldc + j];
                acc[r][j] = _mm512_load_ps(col);
            } else {
                acc[r][j] = _mm512_setzero_ps();
            }
        }
    }
    for (int64_t k = 0; k < kc; ++k) {
        const float* bk = b(k);
#pragma GCC unroll 3
        for (int r = 0; r < RB; ++r) {
            const __m512 av = _mm512_maskz_loadu_ps(rows[r], ar[r] + k * as[r]);
#pragma GCC unroll 8
            for (int j = 0; j < NC; ++j)  // ORDER: one fused multiply-add
                acc[r][j] = _mm512_fmadd_ps(av, _mm512_set1_ps(bk[j]), acc[r][j]);
        }
    }
#pragma GCC unroll 3
    for (int r = 0; r < RB; ++r) {
        if (live[r] == 16) {
            store_cols<NC>(acc[r], c + 16 * r * ldc, ldc);
            continue;
        }
#pragma GCC unroll 8
        for (int j = 0; j < NC; ++j) {
            _mm512_store_ps(col, acc[r][j]);
            for (int64_t i = 0; i < live[r]; ++i) c[(16 * r + i) * ldc + j] = col[i];
        }
    }
}

/// Rows [0, mr) (mr <= 16 RB) of a right edge of nc <= 8 columns: ukr_avx512_cols<nc, RB>.
template <int RB, class B>
void ukr_avx512_narrow(int64_t kc, const AdjacentA* a, const B& b, float* c, int64_t ldc,
                       int64_t mr, int64_t nc, bool load_c) {
    switch (nc) {
        case 1: return ukr_avx512_cols<1, RB>(kc, a, b, c, ldc, mr, load_c);
        case 2: return ukr_avx512_cols<2, RB>(kc, a, b, c, ldc, mr, load_c);
        case 3: return ukr_avx512_cols<3, RB>(kc, a, b, c, ldc, mr, load_c);
        case 4: return ukr_avx512_cols<4, RB>(kc, a, b, c, ldc, mr, load_c);
        case 5: return ukr_avx512_cols<5, RB>(kc, a, b, c, ldc, mr, load_c);
        case 6: return ukr_avx512_cols<6, RB>(kc, a, b, c, ldc, mr, load_c);
        case 7: return ukr_avx512_cols<7, RB>(kc, a, b, c, ldc, mr, load_c);
        default: return ukr_avx512_cols<8, RB>(kc, a, b, c, ldc, mr, load_c);
    }
}

struct KernelAvx2 {
    static constexpr int64_t kMr = 4, kNr = 16;
    static constexpr int64_t kWidePanels = 1;  // no wide in-place tile (see KernelAvx512)
    template <int W, int ROWS, class B>
    static void ukr(int64_t kc, const float* ap, const B& b, float* c, int64_t ldc, int64_t mr,
                    int64_t nr, bool load_c) {
        ukr_avx2<W / 8, ROWS, kMr>(kc, ap, b, c, ldc, mr, nr, load_c);
    }
};

// 16 x 16: one B vector per step and 16 broadcast rows, each broadcast folded into its fma as a
// memory operand ({1to16}); a B panel (kc x 16) takes 16 KB of L1, and conv GEMMs (M = Co, a
// power of two) fill whole tiles. 8 x 32, 12 x 32 and 14 x 32 were measured against it (A/B in
// one process): 12 x 32 matched it on squares but wastes rows on M = 16, 32, 64. Two rows per
// register (a 64-bit broadcast of a row pair against B's even and odd columns: 10 loads per 16
// fmas instead of 17) measured 0.95x: the loads are not its limit. Narrow last panels (<= 8
// columns) take ukr_avx512_cols: N = 49 or 10 (SmallCNN c3, a classifier) gains 1.2-1.4x.
//
// Whole panels also take a wide tile: kWidePanels = 3 panels side by side (read in place,
// BRowTable, or packed, BPanels), 8 rows (each half of a packed A micro-panel, read with the
// panel's stride 16): 24 accumulators, 3 B loads and 8 broadcasts per 24 fmas instead of 17
// loads per 16. Measured on the small per-sample conv products (B in place, K = 32-288):
// 1.05-1.10x the 16 x 16 tile's rate; with packed B and the C prefetch of ukr_avx512 (AMD Zen 4,
// 1 thread, interleaved medians): 1024^3 91 -> 97 GFLOP/s, 64 x 1024 x 576 79 -> 86. Still one
// fma per k per element: the same bits.
struct KernelAvx512 {
    static constexpr int64_t kMr = 16, kNr = 16;
    static constexpr int64_t kWidePanels = 3;
    template <int W, int ROWS, class B>
    static void ukr(int64_t kc, const float* ap, const B& b, float* c, int64_t ldc, int64_t mr,
                    int64_t nr, bool load_c) {
        if constexpr (W < 16) {  // narrow last panel: nr <= 8 columns, any mr <= 16 rows
            const AdjacentA a{ap, kMr};
            ukr_avx512_narrow<1>(kc, &a, b, c, ldc, mr, nr, load_c);
        } else {
            ukr_avx512<(W + 15) / 16, ROWS, kMr>(kc, ap, b, c, ldc, mr, nr, load_c);
        }
    }
    /// The wide tile: rows [0, mr) (mr <= kMr) of micro-panel ap x kWidePanels * kNr columns
    /// of b (BRowTable or BPanels), all of which exist; in halves of 8 rows, a short half at 4,
    /// 2 or 1 rows.
    template <class B>
    static void ukr_wide(int64_t kc, const float* ap, const B& b, float* c, int64_t ldc,
                         int64_t mr, bool load_c) {
        constexpr int kNv = kWidePanels, kW = kWidePanels * kNr;
        for (int64_t h = 0; h < mr; h += 8) {
            const int64_t rows = std::min<int64_t>(8, mr - h);
            const float* a = ap + h;
            float* ct = c + h * ldc;
            if (rows > 4) {
                ukr_avx512<kNv, 8, kMr>(kc, a, b, ct, ldc, rows, kW, load_c);
            } else if (rows > 2) {
                ukr_avx512<kNv, 4, kMr>(kc, a, b, ct, ldc, rows, kW, load_c);
            } else if (rows > 1) {
                ukr_avx512<kNv, 2, kMr>(kc, a, b, ct, ldc, rows, kW, load_c);
            } else {
                ukr_avx512<kNv, 1, kMr>(kc, a, b, ct, ldc, rows, kW, load_c);
            }
        }
    }
};
#endif

}  // namespace dt::kernels::cpu::gemm_detail
