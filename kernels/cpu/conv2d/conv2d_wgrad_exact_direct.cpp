// SPDX-License-Identifier: MIT
// conv.wgrad in the exact mode with the direct leaf's chains (AVX-512; recipe in
// kernels/conv2d.h: the exact sum of the N per-sample leaves, rounded once). The tiled path
// (conv2d_wgrad_exact_tiled.cpp) gathers the batch's transposed im2col, RL x P floats per
// sample: on SmallCNN's 7x7 layer that gather cost as much as the leaves' multiply-adds. Here
// every sample is padded and its dy transposed once (Ci Hp Wp + P Co floats per sample), and dw
// is cut into tiles of live rows x 16 M output channels across threads. A tile computes the
// per-sample leaves of all N samples into a buffer that stays in L2 (each chain fresh from +0:
// the GEMM leaf's bits, conv2d_direct_chain.h) and sums each element's N leaves exactly
// (exact_sum_rows; a part of a split batch adds them to its exact_out accumulators instead).
// ORDER: none across samples (integer accumulation: the same bits as the other exact paths).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/cpu/conv2d/conv2d_direct_chain.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/exact_rows.h"

namespace dt::kernels::cpu::conv2d_internal {

#if defined(__x86_64__)
namespace {

constexpr int64_t kLeafBudget = int64_t{1} << 17;  // floats of a tile's N leaves: 512 KB, L2
constexpr int64_t kMaxStaged = int64_t{1} << 23;   // floats of padded samples + transposed dy
// Positions per sample from which the path is taken: on a 1x1 map (MediumCNN's last layer) a
// chain of one fma measured slower than the tiled path's GEMM-like tiles.
constexpr int64_t kMinP = 16;
// Live rows per tile from which the path is taken: every tile reads all N samples' dy slices,
// and with fewer rows than this those reads outweigh its multiply-adds (SmallCNN's first layer,
// 9 live rows cut in two tiles for two threads: 1.7x slower than the per-sample waves).
constexpr int64_t kMinRowsPerTile = 16;

/// Live rows per tile: as many as keep a tile's leaves in the budget, then fewer so that the
/// tiles (row tiles x channel blocks) come in a multiple of the thread count.
int64_t rows_per_tile(int64_t n, int64_t RL, int64_t cot, int64_t cblocks) {
    const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const int64_t rows_max = std::max<int64_t>(1, kLeafBudget / (n * cot));
    int64_t row_tiles = (RL + rows_max - 1) / rows_max;
    const int64_t tiles = (row_tiles * cblocks + threads - 1) / threads * threads;
    row_tiles = std::min(RL, (tiles + cblocks - 1) / cblocks);
    return (RL + row_tiles - 1) / row_tiles;
}

template <int M>
void exact_direct(const float* x, const float* dy, float* dw, const Geometry& g, int64_t rows_t) {
    using direct_chain::chain_sample;
    const Conv2dParams& p = *g.p;
    const int64_t n = p.n, co = p.co, RL = g.RL, P = g.P, R = g.R;
    const int64_t xsz = p.ci * p.h * p.w, xps = p.pad == 0 ? 0 : p.ci * g.hp * g.wp;
    constexpr int64_t cot = 16 * M, kRows = direct_chain::rows_per_block(M);
    const int64_t cblocks = co / cot;

    // Every sample padded and its dy transposed once; the tiles read them from L2/L3.
    thread_local std::vector<float> t_stage;
    float* xpad = scratch(t_stage, n * (xps + P * co));
    float* dyt = xpad + n * xps;
#pragma omp parallel for schedule(static) if (n > 1 && !omp_in_parallel())
    for (int64_t s = 0; s < n; ++s) {
        if (xps > 0) pad_into(x + s * xsz, g, xpad + s * xps);
        direct_chain::transpose_dy(dy + s * co * P, co, P, dyt + s * P * co);
    }
    const WindowOffsets off = window_offsets(g);  // the calling thread's buffers, read-only

    if (!g.all_live() && p.exact_out == nullptr) std::fill(dw, dw + co * R, 0.0f);
    const int64_t tiles = (RL + rows_t - 1) / rows_t * cblocks;
    // Samples' leaves ld floats apart, 16 past a multiple of the tile: the column sums below walk
    // down all N, which at a multiple of 4 KB would share L1 sets.
    const int64_t ld = rows_t * cot + 16;
#pragma omp parallel for schedule(static) if (tiles > 1 && !omp_in_parallel())
    for (int64_t t = 0; t < tiles; ++t) {
        const int64_t o0 = (t % cblocks) * cot, r0 = (t / cblocks) * rows_t;
        const int64_t rc = std::min(rows_t, RL - r0), elems = rc * cot;
        thread_local std::vector<float> t_leaves, t_sums;
        float* leaves = scratch(t_leaves, n * ld);
        const int64_t blocks = (rc + kRows - 1) / kRows, per = (rc + blocks - 1) / blocks;
        for (int64_t s = 0; s < n; ++s) {
            const float* xp = xps > 0 ? xpad + s * xps : x + s * xsz;
            for (int64_t b0 = 0; b0 < rc; b0 += per)  // blocks of equal rows: no 1-row tails
                chain_sample<M>(xp, dyt + s * P * co + o0, co, P, off.roff + r0 + b0, off.qoff,
                                std::min(per, rc - b0), true, leaves + s * ld + b0 * cot, cot);
        }
        // ORDER: none (integer accumulation, exact_rows.h): element (r, o) of the tile is
        // leaves[s * ld + r * cot + o] over the samples s.
        if (p.exact_out == nullptr) {
            float* sums = scratch(t_sums, elems);
            exact_sum_rows(sums, leaves, ld, n, elems);
            for (int64_t r = 0; r < rc; ++r)
                for (int64_t o = 0; o < cot; ++o)
                    dw[(o0 + o) * R + g.live[r0 + r]] = sums[r * cot + o];
            continue;
        }
        thread_local std::vector<common::ExactAcc> t_accs;
        if (static_cast<int64_t>(t_accs.size()) < elems) t_accs.resize(elems);
        common::exact_init_row(t_accs.data(), elems);
        exact_add_rows(t_accs.data(), leaves, ld, n, elems);
        for (int64_t r = 0; r < rc; ++r)
            for (int64_t o = 0; o < cot; ++o)
                common::exact_merge(p.exact_out[(o0 + o) * R + g.live[r0 + r]],
                                    t_accs[r * cot + o]);
    }
}

}  // namespace
#endif

bool conv2d_wgrad_exact_direct(const float* x, const float* dy, float* dw, const Geometry& g) {
#if defined(__x86_64__)
    const Conv2dParams& p = *g.p;
    if (cpu_isa() != CpuIsa::kAvx512 || p.n < 1 || g.RL == 0 || g.P < kMinP) return false;
    const int64_t xps = p.pad == 0 ? 0 : p.ci * g.hp * g.wp;
    if (p.n * (xps + g.P * p.co) > kMaxStaged) return false;
    const int M = p.co == 16 ? 1 : p.co == 32 ? 2 : p.co % 64 == 0 ? 4 : 0;
    if (M == 0) return false;
    const int64_t rows_t = rows_per_tile(p.n, g.RL, 16 * M, p.co / (16 * M));
    if (rows_t < std::min(g.RL, kMinRowsPerTile)) return false;
    if (M == 1) return exact_direct<1>(x, dy, dw, g, rows_t), true;
    if (M == 2) return exact_direct<2>(x, dy, dw, g, rows_t), true;
    return exact_direct<4>(x, dy, dw, g, rows_t), true;
#endif
    return false;
}

}  // namespace dt::kernels::cpu::conv2d_internal
