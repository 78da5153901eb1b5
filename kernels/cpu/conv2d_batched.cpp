// SPDX-License-Identifier: MIT
// Sample chunks of conv2d (kernels/cpu/conv2d_internal.h): on small feature maps one sample's
// GEMM is a thin matrix (P = 1 on a 1x1 map: a matrix-vector product that streams the whole
// weight per sample), so the kernels put several samples side by side in one GEMM instead.
// Positions of a chunk are indexed j*P + q (sample j of the chunk, position q). None of this
// changes an ORDER: a forward or dgrad column is the same fma chain over the same K whichever
// columns share its GEMM, and a chunk of wgrad is the same sum continued over (sample, q)
// ascending as the per-sample GEMMs chained with `accumulate` (cpu::gemm stores and reloads
// partial sums exactly between K blocks).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d_internal.h"

namespace dt::kernels::cpu::conv2d_internal {

namespace {
/// Columns a chunked GEMM aims for (a few register-tile panels wide).
constexpr int64_t kChunkCols = 512;
/// Most K a wgrad chunk packs at once (bounds its im2col buffer).
constexpr int64_t kWgradChunkK = 1024;
}  // namespace

int64_t samples_per_chunk(const Geometry& g) {
    if (g.P >= kChunkPositions) return 1;
    // At least one chunk per thread when the batch allows, so chunks run side by side.
    const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const int64_t n = g.p->n, per_thread = (n + threads - 1) / threads;
    const int64_t sc = std::clamp<int64_t>(kChunkCols / std::max<int64_t>(g.P, 1), 1, per_thread);
    // A chunk count that is a multiple of the thread count shares evenly (SmallCNN's 7x7 map at
    // batch 128: 16 chunks of 8, not 13 of 10): shrink the chunk, by at most half, until it is.
    for (int64_t s = sc; threads > 1 && s >= std::max<int64_t>(1, sc / 2); --s)
        if (((n + s - 1) / s) % threads == 0) return s;
    return sc;
}

namespace {
/// Data movement big enough to split over threads (called outside a parallel region).
bool split_copy(int64_t floats) { return floats >= (int64_t{1} << 15) && !omp_in_parallel(); }
}  // namespace

void gather_dy(const float* dy, int64_t s0, int64_t sc, const Geometry& g, float* dst) {
    const int64_t co = g.p->co, P = g.P, cols = sc * P;
#pragma omp parallel for schedule(static) if (split_copy(co * cols))
    for (int64_t o = 0; o < co; ++o)
        for (int64_t j = 0; j < sc; ++j)
            copy_run(dst + o * cols + j * P, dy + ((s0 + j) * co + o) * P, P);
}

void im2col_chunk(const float* x, int64_t s0, int64_t sc, const Geometry& g, float* dst) {
    const Conv2dParams& p = *g.p;
    const int64_t cols = sc * g.P, xsz = p.ci * p.h * p.w, psz = p.ci * g.hp * g.wp;
    // The chunk's padded samples first, so that each col row is written in one pass.
    thread_local std::vector<float> t_pad;
    thread_local std::vector<const float*> t_xp;
    t_xp.resize(static_cast<std::size_t>(sc));
    float* pad = p.pad == 0 ? nullptr : scratch(t_pad, sc * psz);
    const float** xps = t_xp.data();
    const bool par = split_copy(g.RL * cols);
#pragma omp parallel for schedule(static) if (par)
    for (int64_t j = 0; j < sc; ++j) {
        const float* xs = x + (s0 + j) * xsz;
        if (pad) pad_into(xs, g, pad + j * psz);
        xps[j] = pad ? pad + j * psz : xs;
    }
    const int64_t st = p.stride, wo = p.wo, ho = p.ho, wp = g.wp;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t i = 0; i < g.RL; ++i) {
        const int64_t rb = g.rbase[g.live[i]];
        float* d = dst + i * cols;
        for (int64_t j = 0; j < sc; ++j) {
            const float* base = xps[j] + rb;
            for (int64_t oh = 0; oh < ho; ++oh, d += wo) {
                const float* src = base + oh * st * wp;
                if (st == 1) {
                    copy_run(d, src, wo);
                } else {
                    for (int64_t ow = 0; ow < wo; ++ow) d[ow] = src[ow * st];
                }
            }
        }
    }
}

void wgrad_group_leaf(const float* x, const float* dy, int64_t s0, int64_t s1, const Geometry& g,
                      float* leaf, bool parallel_gemm) {
    if (!parallel_gemm && wgrad_leaf_few_rows(x, dy, s0, s1, g, leaf)) return;
    const Conv2dParams& p = *g.p;
    const int64_t per = std::max<int64_t>(1, kWgradChunkK / std::max<int64_t>(g.P, 1));
    thread_local std::vector<float> t_col, t_dy;
    for (int64_t s = s0; s < s1; s += per) {
        const int64_t sc = std::min(per, s1 - s), K = sc * g.P;
        float* col = scratch(t_col, g.RL * K);
        im2col_chunk(x, s, sc, g, col);
        const float* a = dy + s * p.co * g.P;  // one sample: dY_s is already (Co, P)
        if (sc > 1) {
            float* d = scratch(t_dy, p.co * K);
            gather_dy(dy, s, sc, g, d);
            a = d;
        }
        // ORDER: leaf[o,i] continues the fma chain over k = (sample, q) ascending: from +0 at
        // s0, from the previous chunk's partial after it. A = dY (Co, K), B = col^T (K, RL).
        gemm(a, col, leaf,
             GemmParams{.m = p.co, .n = g.RL, .k = K, .trans_b = true, .accumulate = s > s0,
                        .parallel = parallel_gemm});
    }
}

void dgrad_chunk(const float* dy, int64_t s0, int64_t sc, const GemmPackedA& wt,
                 const Geometry& g, float* dcol, bool parallel_gemm) {
    const int64_t cols = sc * g.P;
    thread_local std::vector<float> t_b;
    float* b = scratch(t_b, g.p->co * cols);
    gather_dy(dy, s0, sc, g, b);
    // ORDER: dcol[i, (j,q)] = the fma chain over o ascending of w[o,live[i]] * dy[s0+j,o,q].
    gemm(wt, b, dcol, GemmParams{.m = g.RL, .n = cols, .k = g.p->co, .parallel = parallel_gemm});
}

}  // namespace dt::kernels::cpu::conv2d_internal
