// SPDX-License-Identifier: MIT
// Per-channel totals over the samples of a batch, the shape of the bias.grad, bn.stats and
// bn.backward sites: x viewed as rows r = n * C + c of `len` contiguous positions, S sums of
// terms term(r, c, i) per row (c = r % C, the row's channel, given so that terms need not
// divide), total_s(c) over every row of channel c. Host-device bodies of the
// CUDA kernels (used by kernels/cuda/bias_grad.cu and batchnorm2d.cu), tested on the host over
// whole grids. Per mode, as the contracts (kernels/bias_add.h, kernels/batchnorm2d.h) define:
//   leaves   per row (fold_row_leaf): tree, permuted, atomic: +0 + t(r, 0) + t(r, 1) + ...
//            (index order); kahan: kahan_add from (+0, +0); exact: an ExactAcc of every term
//            (added in exact double segments, exact_stream_add), merged with integer atomics
//            into its channel's zeroed accumulator as soon as it is made.
//            One thread per row reading its own row (channel_leaves_body), or for long rows the
//            staged block program of channel_leaves_staged.h: the same chains, coalesced loads.
//   combine  one thread per (sum, channel): tree T over the N sample leaves in sample order;
//            kahan: the same tree with kahan_merge, then kahan_value; permuted: +0 + leaf(o[0])
//            + leaf(o[1]) + ..., o drawn once per call; exact: no combine, the channel's merged
//            accumulator (integer sums: any order) rounded once (channel_round_body).
//            The launcher runs the tree and kahan combines as the block program of
//            channel_combine_block.h (a block per 8 channels, the leaves in 32 parts at once:
//            the same tree T), unless its way says rows (kernels/cuda/runtime.h).
//   atomic   each row's leaf atomic-added into the zeroed total as soon as it is computed: no
//            combine, no ORDER on purpose.
// Layout of the scratch: leaves of sum s at [s * rows + r]; exact: the merged accumulators at
// [s * C + c]. Total s of channel c goes to out.sum[s][c] (ChannelSums: each sum its own array,
// e.g. batch-norm's dbeta and dgamma). A part of a split batch in the exact mode also hands its
// unrounded totals on (channel_part_body: into the caller's accumulators, rounded as its own
// share) and rounds the totals once they are the whole batch's (channel_round_body).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// Batch norm's invstd of a channel's var (kernels/batchnorm2d.h). ORDER: 1 / sqrt(var + eps),
/// the sum, sqrt and division each correctly rounded, as on the CPU.
DT_HD float bn_invstd_of(float var, float eps) { return 1.0f / sqrtf(var + eps); }

/// What becomes of a total as it is stored, for batch norm's statistics (kernels/batchnorm2d.h:
/// mean = total / count; var = total / count, invstd = 1 / sqrt(var + eps)): where `divide`,
/// total / count, and where invstd is set also invstd[c] = bn_invstd_of(that). The same
/// operations on the same float total wherever they run (finish_total), so the combines that
/// store the totals finish them in their own launch instead of a kernel of their own after.
struct ChannelFinish {
    bool divide = false;
    float count = 0.0f;
    float* invstd = nullptr;  // (device)
    float eps = 0.0f;
};
DT_HD float finish_total(const ChannelFinish& f, int64_t c, float total) {
    if (!f.divide) return total;
    const float v = total / f.count;
    if (f.invstd != nullptr) f.invstd[c] = bn_invstd_of(v, f.eps);
    return v;
}

/// Where the S (at most 2) totals of every channel go: sum[s][c] = finish_total(finish, c, total)
/// (the tree, kahan, permuted and exact combines; the atomic mode's leaves are added into sum as
/// they come, unfinished: its caller finishes them after).
struct ChannelSums {
    float* sum[2] = {nullptr, nullptr};
    ChannelFinish finish;
};

struct ChannelTotals {
    int64_t N = 0, C = 0, len = 0;  // rows = N * C
    common::AccumSpec accum;
};

/// Where the leaves go (one of the first three, as the mode says; atomic: atomic_out).
struct ChannelLeaves {
    float* leaves = nullptr;              // tree, permuted: [s * rows + r]
    common::KahanSum* kleaves = nullptr;  // kahan: [s * rows + r]
    common::ExactAcc* accs = nullptr;     // exact: merged into [s * C + r % C], zeroed first
    ChannelSums atomic_out;               // atomic: leaves atomic-added into sum[s][r % C]
};

/// The leaf of row r in the mode of q, from terms(fold), which calls fold(i, v) with the row's
/// terms v[0..S) for i = 0, 1, ..., len - 1 in that order; stored where `out` says when
/// store is true (the staged program folds on the threads that add and stores on those only).
template <int S, class Terms>
DT_HD void fold_row_leaf(const ChannelTotals& q, int64_t r, bool store, const ChannelLeaves& out,
                         const Terms& terms) {
    const int64_t rows = q.N * q.C;
    switch (q.accum.mode) {
        case common::AccumMode::kKahan: {
            common::KahanSum k[S];
            for (int s = 0; s < S; ++s) k[s] = common::kahan_zero();
            terms([&](int64_t, const float* v) {  // ORDER: kahan_add in index order
                for (int s = 0; s < S; ++s) common::kahan_add(k[s], v[s]);
            });
            if (store)
                for (int s = 0; s < S; ++s) out.kleaves[s * rows + r] = k[s];
            return;
        }
        case common::AccumMode::kExact: {  // segments in double (exact_stream_add)
            common::ExactAcc e[S];
            common::ExactShort seg[S];
            for (int s = 0; s < S; ++s) common::exact_init(e[s]), common::exact_short_init(seg[s]);
            terms([&](int64_t i, const float* v) {
                for (int s = 0; s < S; ++s) common::exact_stream_add(e[s], seg[s], v[s]);
                // a normalisation every 2^31 units (accum_exact.h); streaming adds at most 1.5
                // units per term (accum_exact_short.h)
                if ((i & ((int64_t{1} << 30) - 1)) == (int64_t{1} << 30) - 1)
                    for (int s = 0; s < S; ++s) common::exact_normalise(e[s]);
            });
            if (store) {
                for (int s = 0; s < S; ++s) {  // ORDER: none (integer sums, 1 unit each)
                    common::exact_stream_flush(e[s], seg[s]);
                    common::exact_normalise(e[s]);
                    common::exact_atomic_merge(out.accs + s * q.C + r % q.C, e[s]);
                }
            }
            return;
        }
        default: {
            float a[S];
            for (int s = 0; s < S; ++s) a[s] = 0.0f;
            terms([&](int64_t, const float* v) {  // ORDER: index order from +0
                for (int s = 0; s < S; ++s) a[s] = a[s] + v[s];
            });
            if (!store) return;
            for (int s = 0; s < S; ++s) {
                if (q.accum.mode == common::AccumMode::kAtomic) {
                    common::atomic_add_float(out.atomic_out.sum[s] + r % q.C, a[s]);
                } else {
                    out.leaves[s * rows + r] = a[s];
                }
            }
            return;
        }
    }
}

/// Per-row leaves of the S sums of `term` (term(r, c, i, t) writes t[0..S)), one thread per row
/// reading its own row (rows too short for the staged program, channel_leaves_staged.h).
template <int S, class Term>
DT_HD void channel_leaves_body(const GridPos& t, const Term& term, const ChannelTotals& q,
                               const ChannelLeaves& out) {
    common::grid_stride(t, q.N * q.C, [&](int64_t r) {
        const int64_t c = r % q.C;
        fold_row_leaf<S>(q, r, true, out, [&](auto&& fold) {
            float v[S];
            for (int64_t i = 0; i < q.len; ++i) {
                term(r, c, i, v);
                fold(i, static_cast<const float*>(v));
            }
        });
    });
}

/// Global thread 0: the sample order of kPermuted.
DT_HD void channel_order_body(const GridPos& t, uint32_t* order, const ChannelTotals& q) {
    if (t.global() == 0) common::permute_order(order, q.N, q.accum.permute_key);
}

/// out.sum[s][c] from the leaves, one thread per (sum, channel); tree, kahan and permuted.
DT_HD void channel_combine_body(const GridPos& t, int S, const ChannelTotals& q,
                                const float* leaves, const common::KahanSum* kleaves,
                                const uint32_t* order, const ChannelSums& out) {
    const int64_t rows = q.N * q.C;
    common::grid_stride(t, S * q.C, [&](int64_t i) {
        const int64_t s = i / q.C, c = i % q.C, base = s * rows + c;
        float& total = out.sum[s][c];
        switch (q.accum.mode) {
            case common::AccumMode::kTree:  // ORDER: T over the samples' leaves
                total = finish_total(out.finish, c,
                                     common::reduce_tree_combine(leaves + base, q.N, q.C));
                return;
            case common::AccumMode::kPermuted:  // ORDER: +0 + leaf(o[0]) + leaf(o[1]) + ...
                total = finish_total(out.finish, c,
                                     common::permuted_sum(leaves + base, order, q.N, q.C));
                return;
            case common::AccumMode::kKahan:  // ORDER: T_k, then kahan_value
                total = finish_total(
                    out.finish, c,
                    common::kahan_value(common::kahan_tree_combine(kleaves + base, q.N, q.C)));
                return;
            case common::AccumMode::kExact:  // channel_round_body
            case common::AccumMode::kAtomic:
                return;
        }
    });
}

// ---- a part of a split batch (engine/runtime/batch_split.h) ----

/// Where a part's unrounded exact totals go: sum[s][c] (the caller's accumulators, device).
struct ChannelSinks {
    common::ExactAcc* sum[2] = {nullptr, nullptr};
};

/// What a part hands on of its own exact totals: sink.sum[s][c] += merged[s * C + c]
/// (unrounded, where sink.sum[s] is set) and local.sum[s][c] = its rounding (where set).
DT_HD void channel_part_body(const GridPos& t, int S, const ChannelTotals& q,
                             const common::ExactAcc* merged, const ChannelSinks& sink,
                             const ChannelSums& local) {
    common::grid_stride(t, S * q.C, [&](int64_t i) {
        const int64_t s = i / q.C, c = i % q.C;
        if (sink.sum[s] != nullptr) common::exact_merge(sink.sum[s][c], merged[i]);
        if (local.sum[s] != nullptr) local.sum[s][c] = common::exact_value(merged[i]);
    });
}

/// out.sum[s][c] = merged[s * C + c] rounded once, finished (where out.sum[s] is set).
DT_HD void channel_round_body(const GridPos& t, int S, const ChannelTotals& q,
                              const common::ExactAcc* merged, const ChannelSums& out) {
    common::grid_stride(t, S * q.C, [&](int64_t i) {
        const int64_t s = i / q.C, c = i % q.C;
        if (out.sum[s] != nullptr)
            out.sum[s][c] = finish_total(out.finish, c, common::exact_value(merged[i]));
    });
}

/// total[c] = finish_total(f, c, total[c]) for every channel c < C: the finish of totals that
/// were stored unfinished (the atomic mode's; a part's, once its hook has completed them).
DT_HD void channel_finish_body(const GridPos& t, float* total, const ChannelFinish& f, int64_t C) {
    common::grid_stride(t, C, [&](int64_t c) { total[c] = finish_total(f, c, total[c]); });
}

}  // namespace dt::kernels::cuda
