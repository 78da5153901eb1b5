// SPDX-License-Identifier: MIT
// conv.dgrad in the tree mode on the shapes of conv2d_dgrad_is_forward (stride 1, square kernel,
// pad < K), run as a forward: dx is the forward convolution of dy with the weights flipped in
// both kernel axes and transposed, on the forward kernels (conv2d.cpp, conv2d_sample_chunks.cpp);
// this file packs those weights straight from w. One fma chain of Co*K*K terms per element of
// dx: no column buffer, no col2im, and the forward's long-K GEMMs instead of dgrad's K = Co ones.
// ORDER: kernels/conv2d.h, conv.dgrad tree on these shapes (o ascending, then taps descending).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/gemm.h"

namespace dt::kernels::cpu::conv2d_internal {

namespace {

/// The packed A (gemm_pack_a's layout, kernels/gemm.h) of the transposed convolution's live
/// weight columns: A[c, j] = w[o, c, KK-1-t] for the live row r = g.live[j] = o*KK + t of the
/// transposed geometry g (taps flipped in both axes), written straight from w: for one MR-row
/// panel and K block the reads are a few runs of MR*KK floats. Values move only.
GemmPackedA pack_flipped_weights(const float* w, const Conv2dParams& p, const Geometry& g) {
    const CpuIsa isa = cpu_isa();
    const int64_t kk = p.kh * p.kw, m = p.ci, k = g.RL, mr = gemm_tile_rows(isa);
    const int64_t mpad = (m + mr - 1) / mr * mr;
    thread_local std::vector<float> t_apacked;
    float* buf = scratch(t_apacked, mpad * k);
    const int64_t kblocks = (k + kGemmKc - 1) / kGemmKc, panels = mpad / mr;
    const bool par = mpad * k >= (int64_t{1} << 15) && !omp_in_parallel();
    parallel_for(par, kblocks * panels, [&](int64_t u) {
        const int64_t pc = (u / panels) * kGemmKc, i0 = (u % panels) * mr;
        const int64_t kc = std::min(kGemmKc, k - pc), rows = std::min(mr, m - i0);
        float* dst = buf + pc * mpad + i0 * kc;
        for (int64_t j = 0; j < kc; ++j) {
            const int64_t r = g.live[pc + j], o = r / kk, t = r % kk;
            const float* src = w + (o * p.ci + i0) * kk + (kk - 1 - t);
            float* d = dst + j * mr;
            for (int64_t i = 0; i < rows; ++i) d[i] = src[i * kk];
            for (int64_t i = rows; i < mr; ++i) d[i] = 0.0f;
        }
    });
    return GemmPackedA{buf, isa};
}

}  // namespace

/// dx is the forward convolution of dy (N, Co, Ho, Wo), padded by K-1-pad, with the weights
/// flipped in both kernel axes and transposed to (Ci, Co, K, K).
void dgrad_tree_as_forward(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    Conv2dParams q = p;
    q.ci = p.co, q.h = p.ho, q.w = p.wo, q.co = p.ci, q.pad = p.kh - 1 - p.pad, q.ho = p.h,
    q.wo = p.w;
    const Geometry g(q);
    // ORDER: dx = the forward recipe of q: the fma chain from +0 over o ascending, then taps
    // (ki, kj) descending, of w[o,c,ki,kj] * dy_padded (kernels/conv2d.h, conv.dgrad tree).
    forward_packed(dy, pack_flipped_weights(w, p, g), nullptr, dx, g);
}

}  // namespace dt::kernels::cpu::conv2d_internal
