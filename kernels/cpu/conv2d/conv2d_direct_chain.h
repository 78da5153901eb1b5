// SPDX-License-Identifier: MIT
// The conv.wgrad leaf's chains without a GEMM (AVX-512), shared by the tree mode's direct leaf
// (conv2d_wgrad_direct_leaf.cpp) and the exact mode's direct tiles
// (conv2d_wgrad_exact_direct.cpp). Lanes run over 16 output channels: a chain (o, r) keeps its
// own lane and register, and for each position q, M vectors of dy[s, o0..o0+16M-1, q] (dy
// transposed per sample to (P, Co)) meet one broadcast xpad[s, r, q] per live row r, read from
// the padded sample. Rows run in blocks that fill the registers.
// ORDER: each chain is the GEMM leaf's (wgrad_group_leaf, kernels/conv2d.h): one fma per
// position, q ascending, continued from the chain's previous value (or from +0 when fresh).
#pragma once
#include <cstdint>

#include "kernels/cpu/conv2d/conv2d_internal.h"

#if defined(__x86_64__)
#include "kernels/cpu/transpose_avx512.h"

namespace dt::kernels::cpu::conv2d_internal::direct_chain {

/// dyt (P, co) = dys (co, P) transposed; co a multiple of 16.
__attribute__((target("avx512f"))) inline void transpose_dy(const float* dys, int64_t co, int64_t P,
                                                            float* dyt) {
    int64_t q0 = 0;
    for (; q0 + 16 <= P; q0 += 16)
        for (int64_t o0 = 0; o0 < co; o0 += 16) {
            __m512 r[16];
            for (int t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(dys + (o0 + t) * P + q0);
            transpose16x16(r);
            for (int t = 0; t < 16; ++t) _mm512_storeu_ps(dyt + (q0 + t) * co + o0, r[t]);
        }
    for (int64_t q = q0; q < P; ++q)
        for (int64_t o = 0; o < co; ++o) dyt[q * co + o] = dys[o * P + q];
}

/// Rows per block for M channel vectors: every accumulator, M dy vectors and one broadcast fit
/// in the 32 registers.
constexpr int rows_per_block(int M) { return M == 4 ? 6 : 28 / M; }

/// A block of rc <= rows_per_block(M) leaf rows, 16 M channels, continues its chains over the
/// P positions of one sample: xp the padded sample, dyt its dy transposed and offset to the
/// block's first channel (row q at dyt + q * ldd), roff the block's rows' first pixels in xp,
/// qoff the positions' windows. Leaf row r of the block is at leaf + r * ldl; fresh: the chains
/// start from +0 instead of the leaf's values.
template <int M>
__attribute__((target("avx512f"))) inline void chain_sample(const float* xp, const float* dyt,
                                                            int64_t ldd, int64_t P,
                                                            const int32_t* roff,
                                                            const int64_t* qoff, int64_t rc,
                                                            bool fresh, float* leaf, int64_t ldl) {
    constexpr int kRows = rows_per_block(M);
    __m512 acc[kRows][M];
#pragma GCC unroll 28
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v)
            acc[r][v] =
                fresh || r >= rc ? _mm512_setzero_ps() : _mm512_loadu_ps(leaf + r * ldl + 16 * v);
    for (int64_t q = 0; q < P; ++q) {  // ORDER: q ascending, one fma per chain
        __m512 d[M];
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v) d[v] = _mm512_loadu_ps(dyt + q * ldd + 16 * v);
        const float* at = xp + qoff[q];
#pragma GCC unroll 28
        for (int r = 0; r < kRows; ++r) {
            if (r >= rc) break;
            const __m512 xv = _mm512_set1_ps(at[roff[r]]);
#pragma GCC unroll 4
            for (int v = 0; v < M; ++v) acc[r][v] = _mm512_fmadd_ps(xv, d[v], acc[r][v]);
        }
    }
#pragma GCC unroll 28
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v)
            if (r < rc) _mm512_storeu_ps(leaf + r * ldl + 16 * v, acc[r][v]);
}

}  // namespace dt::kernels::cpu::conv2d_internal::direct_chain
#endif
