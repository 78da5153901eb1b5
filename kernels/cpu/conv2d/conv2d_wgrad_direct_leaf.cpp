// SPDX-License-Identifier: MIT
// The conv.wgrad leaf without a GEMM (AVX-512 path). As a GEMM, the leaf (Co, RL) = dY (Co, K)
// col^T needs col^T packed: a transpose of RL x K floats gathered from the padded samples, a
// fifth of ResNet-18's stage-1 wgrad and more than the multiply-adds of a first layer (Ci = 1
// or 3: RL = 9..27, a thin product). Here only dy is transposed, per sample to (P, Co): Co x P
// floats. Lanes run over 16 output channels: a chain (o, r) keeps its own lane and register,
// and for each position q, M vectors of dy[s, o0..o0+16M-1, q] meet one broadcast xpad[s, r, q]
// per live row r (read from the padded sample). Rows run in blocks that fill the registers
// (27 rows of Ci = 3 with M = 1: one block, so dy is read once per q), channels in blocks of
// 16 M; the leaf is kept in a (RL, Co) buffer between samples, reloaded unchanged. Taken for
// few live rows, and for leaves of at most kDirectLeafBytes, which stay in L2 while every
// sample passes over them (larger ones measured no faster than the GEMM).
// ORDER: the GEMM leaf's (wgrad_group_leaf, kernels/conv2d.h): the fma chain from +0 over
// (sample, q) ascending, so the bits are the same (tests compare every ISA with the recipe).
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/cpu/transpose_avx512.h"

namespace dt::kernels::cpu::conv2d_internal {

#if defined(__x86_64__)
namespace {

constexpr int kRowBlock = 28;                           // accumulators per block (of 32 registers)
constexpr int64_t kDirectLeafBytes = int64_t{1} << 18;  // leaves up to 256 KB: L2-resident

/// dyt (P, co) = dys (co, P) transposed; co a multiple of 16.
__attribute__((target("avx512f"))) void transpose_dy(const float* dys, int64_t co, int64_t P,
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
constexpr int rows_per_block(int M) { return M == 4 ? 6 : kRowBlock / M; }

/// leaft rows [r0, r0 + rc), channels [o0, o0 + 16 M) (RL x Co, row r at leaft + r * Co)
/// continue their chains over the positions of one sample: xp its padded sample, dyt its dy
/// transposed (P, Co).
template <int M>
__attribute__((target("avx512f"))) void chain_sample(const float* xp, const float* dyt,
                                                     const Geometry& g, const int32_t* rbl,
                                                     const int64_t* qoff, int64_t r0, int64_t rc,
                                                     int64_t o0, bool fresh, float* leaft) {
    constexpr int kRows = rows_per_block(M);
    const int64_t co = g.p->co, P = g.P;
    dyt += o0;
    leaft += o0;
    __m512 acc[kRows][M];
#pragma GCC unroll 28
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v)
            acc[r][v] = fresh || r >= rc ? _mm512_setzero_ps()
                                         : _mm512_loadu_ps(leaft + (r0 + r) * co + 16 * v);
    for (int64_t q = 0; q < P; ++q) {  // ORDER: q ascending, one fma per chain
        __m512 d[M];
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v) d[v] = _mm512_loadu_ps(dyt + q * co + 16 * v);
        const float* at = xp + qoff[q];
#pragma GCC unroll 28
        for (int r = 0; r < kRows; ++r) {
            if (r >= rc) break;
            const __m512 xv = _mm512_set1_ps(at[rbl[r0 + r]]);
#pragma GCC unroll 4
            for (int v = 0; v < M; ++v) acc[r][v] = _mm512_fmadd_ps(xv, d[v], acc[r][v]);
        }
    }
#pragma GCC unroll 28
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v)
            if (r < rc) _mm512_storeu_ps(leaft + (r0 + r) * co + 16 * v, acc[r][v]);
}

/// The leaf of samples s0 .. s1 - 1; channels in blocks of 16 M.
template <int M>
void leaf_rows(const float* x, const float* dy, int64_t s0, int64_t s1, const Geometry& g,
               float* leaf) {
    const Conv2dParams& p = *g.p;
    const int64_t co = p.co, RL = g.RL, P = g.P, xsz = p.ci * p.h * p.w;
    constexpr int64_t kRows = rows_per_block(M);
    const WindowOffsets off = window_offsets(g);
    thread_local std::vector<float> t_leaft, t_dyt;
    float* leaft = scratch(t_leaft, RL * co);
    float* dyt = scratch(t_dyt, P * co);
    for (int64_t s = s0; s < s1; ++s) {
        const float* xp = pad_sample(x + s * xsz, g);
        transpose_dy(dy + s * co * P, co, P, dyt);
        for (int64_t o0 = 0; o0 < co; o0 += 16 * M)
            for (int64_t r0 = 0; r0 < RL; r0 += kRows)
                chain_sample<M>(xp, dyt, g, off.roff, off.qoff, r0, std::min(kRows, RL - r0), o0,
                                s == s0, leaft);
    }
    for (int64_t o = 0; o < co; ++o)
        for (int64_t i = 0; i < RL; ++i) leaf[o * RL + i] = leaft[i * co + o];
}

}  // namespace
#endif

bool wgrad_leaf_direct(const float* x, const float* dy, int64_t s0, int64_t s1, const Geometry& g,
                       float* leaf) {
#if defined(__x86_64__)
    const int64_t co = g.p->co;
    if (cpu_isa() != CpuIsa::kAvx512 || s1 <= s0) return false;
    const bool few = g.RL <= 32;
    const bool direct = g.RL * co * static_cast<int64_t>(sizeof(float)) <= kDirectLeafBytes;
    if ((few || direct) && co == 16) return leaf_rows<1>(x, dy, s0, s1, g, leaf), true;
    if ((few || direct) && co == 32) return leaf_rows<2>(x, dy, s0, s1, g, leaf), true;
    if (direct && co % 64 == 0) return leaf_rows<4>(x, dy, s0, s1, g, leaf), true;
#endif
    return false;
}

}  // namespace dt::kernels::cpu::conv2d_internal
