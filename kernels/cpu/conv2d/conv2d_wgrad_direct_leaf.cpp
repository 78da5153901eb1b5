// SPDX-License-Identifier: MIT
// The conv.wgrad leaf without a GEMM (AVX-512 path). As a GEMM, the leaf (Co, RL) = dY (Co, K)
// col^T needs col^T packed: a transpose of RL x K floats gathered from the padded samples, a
// fifth of ResNet-18's stage-1 wgrad and more than the multiply-adds of a first layer (Ci = 1
// or 3: RL = 9..27, a thin product). Here only dy is transposed, per sample to (P, Co), and the
// chains run with lanes over output channels (conv2d_direct_chain.h): rows in blocks that fill
// the registers (27 rows of Ci = 3 with M = 1: one block, so dy is read once per q), channels in
// blocks of 16 M; the leaf is kept in a (RL, Co) buffer between samples, reloaded unchanged.
// Taken for few live rows, and for leaves of at most kDirectLeafBytes, which stay in L2 while
// every sample passes over them (larger ones measured no faster than the GEMM).
// ORDER: the GEMM leaf's (wgrad_group_leaf, kernels/conv2d.h): the fma chain from +0 over
// (sample, q) ascending, so the bits are the same (tests compare every ISA with the recipe).
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d/conv2d_direct_chain.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"

namespace dt::kernels::cpu::conv2d_internal {

#if defined(__x86_64__)
namespace {

using direct_chain::chain_sample;
using direct_chain::rows_per_block;
using direct_chain::transpose_dy;

constexpr int64_t kDirectLeafBytes = int64_t{1} << 18;  // leaves up to 256 KB: L2-resident

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
                chain_sample<M>(xp, dyt + o0, co, P, off.roff + r0, off.qoff,
                                std::min(kRows, RL - r0), s == s0, leaft + r0 * co + o0, co);
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
