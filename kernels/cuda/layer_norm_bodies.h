// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA layer-norm kernels (kernels/cuda/layer_norm.cu), host-device,
// tested on the host over whole grids against the CPU (kernels/layer_norm.h's recipe).
// The row sums R run as a block program: a block of kLnThreads threads takes kLnRows tokens at
// a time, a warp per token. Lane j folds leaf j (features j, j + 32, ...: the warp's loads are
// coalesced) into shared memory; then the leaves are combined there level by level, pairs then
// pairs of pairs (reduce_tree.h's blocks with B = 2 at every level: the tree T itself), or by
// lane 0 in the permuted order; the exact sum is lane 0's alone. The same chains and the same
// tree as the CPU, so the same bits. The sums over tokens G (dgamma, dbeta) are the per-channel
// totals of channel_totals_bodies.h: a row per (sequence, feature), its T tokens as positions.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/grid.h"
#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/launch_shape.h"
#include "kernels/layer_norm.h"

namespace dt::kernels::cuda {

using common::GridPos;

inline constexpr uint32_t kLnThreads = 256;  // every launch of the block programs uses this
inline constexpr int64_t kLnWarp = 32;       // threads per token: lane j folds leaf j
inline constexpr int64_t kLnRows = kLnThreads / kLnWarp;  // tokens per block at a time
/// Shared floats: a sum and a compensation per thread for each of at most two sums.
inline constexpr int kLnSharedFloats = 2 * 2 * static_cast<int>(kLnThreads);
static_assert(kLnWarp == kLayerNormLeaves, "a lane per leaf");
static_assert(kLnThreads <= kMaxBlockThreads);

/// The grid of the block programs: a block per kLnRows tokens, up to kElementwiseMaxBlocks (the
/// programs stride over the tokens, so any grid covers them all).
DT_HD uint32_t ln_grid(int64_t M) {
    const int64_t b = (M + kLnRows - 1) / kLnRows;
    return static_cast<uint32_t>(b < 1 ? 1
                                       : (b > kElementwiseMaxBlocks ? kElementwiseMaxBlocks : b));
}

/// R of the S (at most 2) sums of term (term(i, v) writes v[0..S) for feature i) over one token's
/// C features, by this thread's warp; total[s] on every lane (0 where !live). Every thread of
/// the block calls it together (it meets barriers); `live`: the warp has a token. order:
/// permute_order(layer_norm_leaves(C), key) (device; kPermuted only).
template <int S, class Sync, class Term>
DT_HD void ln_block_row_sums(const GridPos& t, float* shared, const Sync& sync,
                             const common::AccumSpec& spec, int64_t C, const uint32_t* order,
                             bool live, const Term& term, float* total) {
    const int64_t L = layer_norm_leaves(C);
    const int64_t lane = t.thread % kLnWarp, first = t.thread - lane;  // the warp's cell 0
    float* sum = shared;                                               // [s * kLnThreads + thread]
    float* comp = shared + S * kLnThreads;                             // kahan's, alike
    const common::AccumMode mode = spec.mode;
    const bool kahan = mode == common::AccumMode::kKahan;
    if (mode == common::AccumMode::kExact) {
        if (live && lane == 0) {
            for (int s = 0; s < S; ++s) {  // ORDER: none (the exact sum, rounded once)
                sum[s * kLnThreads + first] = common::exact_sum_of([&](auto&& add) {
                    for (int64_t i = 0; i < C; ++i) {
                        float v[S];
                        term(i, v);
                        add(v[s]);
                    }
                });
            }
        }
    } else if (live && lane < L) {
        if (kahan) {
            common::KahanSum k[S];
            for (int s = 0; s < S; ++s) k[s] = common::kahan_zero();
            for (int64_t i = lane; i < C; i += kLnWarp) {  // ORDER: kahan_add, index order
                float v[S];
                term(i, v);
                for (int s = 0; s < S; ++s) common::kahan_add(k[s], v[s]);
            }
            for (int s = 0; s < S; ++s)
                sum[s * kLnThreads + t.thread] = k[s].sum,
                                     comp[s * kLnThreads + t.thread] = k[s].comp;
        } else {
            float a[S];
            for (int s = 0; s < S; ++s) a[s] = 0.0f;
            for (int64_t i = lane; i < C; i += kLnWarp) {  // ORDER: leaf chain from +0
                float v[S];
                term(i, v);
                for (int s = 0; s < S; ++s) a[s] = a[s] + v[s];
            }
            for (int s = 0; s < S; ++s) sum[s * kLnThreads + t.thread] = a[s];
        }
    }
    sync();  // every leaf is in shared memory
    if (mode == common::AccumMode::kPermuted) {
        if (live && lane == 0) {
            for (int s = 0; s < S; ++s) {  // ORDER: +0 + leaf(o[0]) + leaf(o[1]) + ...
                float acc = 0.0f;
                for (int64_t k = 0; k < L; ++k) acc = acc + sum[s * kLnThreads + first + order[k]];
                sum[s * kLnThreads + first] = acc;
            }
        }
        sync();
    } else if (mode != common::AccumMode::kExact) {
        // ORDER: T (kahan: T_k), pairs of pairs: leaf lane + step into leaf lane, the left
        // operand, where lane + step < L. L is the same on every thread: the same barriers.
        for (int64_t step = 1; step < L; step *= 2) {
            if (live && lane % (2 * step) == 0 && lane + step < L) {
                for (int s = 0; s < S; ++s) {
                    const int64_t me = s * kLnThreads + t.thread, right = me + step;
                    if (kahan) {
                        common::KahanSum k{sum[me], comp[me]};
                        common::kahan_merge(k, common::KahanSum{sum[right], comp[right]});
                        sum[me] = k.sum, comp[me] = k.comp;
                    } else {
                        sum[me] = sum[me] + sum[right];
                    }
                }
            }
            sync();  // this level's sums are in place
        }
    }
    for (int s = 0; s < S; ++s) {
        const int64_t at = s * kLnThreads + first;
        total[s] = !live   ? 0.0f
                   : kahan ? common::kahan_value(common::KahanSum{sum[at], comp[at]})
                           : sum[at];
    }
    sync();  // every lane has read its totals before the cells are written again
}

/// The forward (ln.stats): mean, rstd and y of every token, a warp per token.
template <class Sync>
DT_HD void ln_forward_block(const GridPos& t, float* shared, const Sync& sync, const float* x,
                            const float* gamma, const float* beta, float* y, float* mean,
                            float* rstd, const LayerNormParams& p, const uint32_t* order) {
    const int64_t lane = t.thread % kLnWarp, w = t.thread / kLnWarp;
    const float count = static_cast<float>(p.C);
    // The same trips on every thread of the block (its barriers).
    for (int64_t r0 = t.block * kLnRows; r0 < p.M; r0 += t.blocks * kLnRows) {
        const int64_t m = r0 + w;
        const bool live = m < p.M;
        const float* xr = x + (live ? m : 0) * p.C;
        float s;
        ln_block_row_sums<1>(
            t, shared, sync, p.accum, p.C, order, live, [&](int64_t i, float* v) { v[0] = xr[i]; },
            &s);
        const float mu = s / count;  // ORDER: mean = R(x) / count
        ln_block_row_sums<1>(
            t, shared, sync, p.accum, p.C, order, live,
            [&](int64_t i, float* v) {
                const float d = xr[i] - mu;
                v[0] = d * d;
            },
            &s);
        const float rs = layer_norm_rstd(s / count, p.eps);  // ORDER: var = R(d * d) / count
        if (!live) continue;
        if (lane == 0) mean[m] = mu, rstd[m] = rs;
        float* yr = y + m * p.C;
        for (int64_t i = lane; i < p.C; i += kLnWarp)
            yr[i] = layer_norm_y(layer_norm_xhat(xr[i], mu, rs), gamma[i], beta[i]);
    }
}

/// The backward's dx (ln.grad's row sums), a warp per token.
template <class Sync>
DT_HD void ln_backward_dx_block(const GridPos& t, float* shared, const Sync& sync, const float* dy,
                                const float* x, const float* mean, const float* rstd,
                                const float* gamma, float* dx, const LayerNormParams& p,
                                const uint32_t* order) {
    const int64_t lane = t.thread % kLnWarp, w = t.thread / kLnWarp;
    const float count = static_cast<float>(p.C);
    for (int64_t r0 = t.block * kLnRows; r0 < p.M; r0 += t.blocks * kLnRows) {
        const int64_t m = r0 + w;
        const bool live = m < p.M;
        const int64_t row = (live ? m : 0) * p.C;
        const float *xr = x + row, *dyr = dy + row;
        const float mu = live ? mean[m] : 0.0f, rs = live ? rstd[m] : 0.0f;
        float s[2];
        ln_block_row_sums<2>(
            t, shared, sync, p.accum, p.C, order, live,
            [&](int64_t i, float* v) {
                const float g = dyr[i] * gamma[i];
                v[0] = g;
                v[1] = g * layer_norm_xhat(xr[i], mu, rs);
            },
            s);
        if (!live) continue;
        const float m1 = s[0] / count, m2 = s[1] / count;  // ORDER: as the CPU
        float* d = dx + row;
        for (int64_t i = lane; i < p.C; i += kLnWarp)
            d[i] = layer_norm_dx(dyr[i] * gamma[i], layer_norm_xhat(xr[i], mu, rs), m1, m2, rs);
    }
}

/// G's rows for channel_totals: row r = b * C + c (sequence b, feature c), positions i < T the
/// sequence's tokens m = b * T + i. t0 = dy, t1 = dy * xhat.
struct LnGradTerm {
    const float *x, *dy, *mean, *rstd;
    int64_t T, C;
    DT_HD void operator()(int64_t r, int64_t c, int64_t i, float* t) const {
        const int64_t m = (r - c) / C * T + i, e = m * C + c;
        const float d = dy[e];
        t[0] = d;
        t[1] = d * layer_norm_xhat(x[e], mean[m], rstd[m]);
    }
};

/// G's shape for channel_totals: B sequences of T positions, C channels.
DT_HD ChannelTotals ln_grad_totals(const LayerNormParams& p) {
    return ChannelTotals{p.M / p.T, p.C, p.T, p.accum};
}

}  // namespace dt::kernels::cuda
