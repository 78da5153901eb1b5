// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA causal self-attention (kernels/cuda/attention.cu), host-device,
// on the recipe's pieces of kernels/attention.h, which the CPU runs too: so the bits are the
// CPU's by construction in tree, kahan, exact and permuted. Scores are never stored: a thread
// recomputes those of its block. A first pass finds each query row's max (a thread per row);
// then a thread per (row, block) item makes one leaf, where the mode keeps it: floats (tree,
// permuted) or KahanSums (kahan) in scratch, merged into the row's exact accumulators with
// integer atomics (exact: any order, the same bits), or raced into the zeroed outputs (atomic:
// the leaves of a row land in any order); then a thread per row combines its leaves in the
// mode's order. Items past a row's last block do nothing. The backward first computes every
// Di_t, then runs dQ over key blocks, then dK and dV over query blocks.
// The CPU suite runs them over whole grids (tests/kernels/cuda/attention_bodies_test.cpp).
#pragma once
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// Where the leaves go: one of them, by the mode (atomic: the outputs themselves).
struct AttnLeaves {
    float* sums = nullptr;              // tree, permuted: [rows][max blocks][W]
    common::KahanSum* kahan = nullptr;  // kahan: [rows][max blocks][W]
    common::ExactAcc* exact = nullptr;  // exact: [rows][W], zeroed
};

/// A block's terms: `parts` weighted-row parts of D elements (w[q] over k[q]), and with_sum:
/// part 0's weights summed (the forward's l) as element parts * D.
struct AttnTerms {
    const float* w[2];
    AttnBlock k[2];
    int parts;
    bool with_sum;
};

DT_HD int64_t attention_leaf_width(const AttnTerms& x, int64_t D) {
    return x.parts * D + (x.with_sum ? 1 : 0);
}

/// Stores one leaf of row r, block kb (W elements) where the mode keeps it; kAtomic adds it to
/// dst[q][d] (part q's outputs) and *dsum instead (no ORDER: the nondeterministic mode).
DT_HD void attention_leaf_to(const AttnTerms& x, const AttentionParams& p, const AttnLeaves& L,
                             int64_t r, int64_t kb, float* const* dst, float* dsum) {
    const int64_t D = p.D, W = attention_leaf_width(x, D), NB = attention_max_blocks(p.T);
    const int64_t slot = (r * NB + kb) * W;
    switch (p.accum.mode) {
        case common::AccumMode::kTree:
        case common::AccumMode::kPermuted:
            for (int q = 0; q < x.parts; ++q)
                attention_leaf(x.w[q], x.k[q], D, L.sums + slot + q * D);
            if (x.with_sum) L.sums[slot + x.parts * D] = common::sum_sequential(x.w[0], x.k[0].n);
            return;
        case common::AccumMode::kKahan:
            for (int q = 0; q < x.parts; ++q)
                attention_leaf_kahan(x.w[q], x.k[q], D, L.kahan + slot + q * D);
            if (x.with_sum) L.kahan[slot + x.parts * D] = common::kahan_sum(x.w[0], x.k[0].n);
            return;
        case common::AccumMode::kExact:
            for (int64_t e = 0; e < W; ++e) {
                common::ExactAcc a;
                common::exact_init(a);
                if (e < x.parts * D) {
                    attention_leaf_exact(x.w[e / D], x.k[e / D], e % D, a);
                } else {
                    for (int64_t i = 0; i < x.k[0].n; ++i) common::exact_add(a, x.w[0][i]);
                }
                common::exact_atomic_merge(L.exact + r * W + e, a);  // ORDER: none
            }
            return;
        case common::AccumMode::kAtomic:
            for (int q = 0; q < x.parts; ++q)
                for (int64_t d = 0; d < D; ++d) {
                    const AttnBlock kd{x.k[q].n, x.k[q].rows + d, x.k[q].stride};
                    float v = 0.0f;
                    attention_leaf(x.w[q], kd, 1, &v);  // element d of the leaf
                    common::atomic_add_float(dst[q] + d, v);
                }
            if (x.with_sum)
                common::atomic_add_float(dsum, common::sum_sequential(x.w[0], x.k[0].n));
            return;
    }
}

/// Element e of row r's total over its n leaves (W elements each), in the mode (not kAtomic).
/// orders: the permuted mode's table (attention.h), null otherwise.
DT_HD float attention_total_of(const AttnLeaves& L, const AttentionParams& p, int64_t r, int64_t W,
                               int64_t n, int64_t e, const uint32_t* orders) {
    const int64_t first = r * attention_max_blocks(p.T) * W;
    switch (p.accum.mode) {
        case common::AccumMode::kKahan:
            return attention_total_kahan(L.kahan + first, n, W, e);
        case common::AccumMode::kExact:
            return common::exact_value(L.exact[r * W + e]);
        case common::AccumMode::kPermuted:
            return attention_total(L.sums + first, n, W, e, p.accum.mode,
                                   orders + attention_order_at(n));
        default:
            return attention_total(L.sums + first, n, W, e, p.accum.mode, nullptr);
    }
}

/// The permuted mode's table: the order of n leaves for n = 1 .. most, a thread per n.
DT_HD void attention_orders_body(const GridPos& t, uint32_t* table, int64_t most, uint64_t key) {
    common::grid_stride(t, most, [&](int64_t i) {
        common::permute_order(table + attention_order_at(i + 1), i + 1, key);
    });
}

/// (b, h, t) of row r.
struct AttnRow {
    int64_t b, h, t;
};
DT_HD AttnRow attention_row(const AttentionParams& p, int64_t r) {
    return AttnRow{r / (p.H * p.T), r / p.T % p.H, r % p.T};
}

// ---- forward ----

DT_HD void attention_rowmax_body(const GridPos& t, const float* qkv, float* rowmax,
                                 const AttentionParams& p) {
    const float scale = attention_scale(p.D);
    common::grid_stride(t, attention_rows(p), [&](int64_t r) {
        const AttnRow w = attention_row(p, r);
        if (w.t < p.q0) return;  // a cached row
        rowmax[r] = attention_row_max(qkv, p, w.b, w.h, w.t, scale);
    });
}

/// f(r, row, i) for every row r and its i-th block, i < blocks(row): a thread per item
/// r * NB + i (NB = attention_max_blocks(T)); the items past a row's last block do nothing.
template <class Blocks, class F>
DT_HD void for_each_row_block(const GridPos& t, const AttentionParams& p, const Blocks& blocks,
                              F&& f) {
    const int64_t NB = attention_max_blocks(p.T);
    common::grid_stride(t, attention_rows(p) * NB, [&](int64_t item) {
        const int64_t r = item / NB, i = item % NB;
        const AttnRow w = attention_row(p, r);
        if (i < blocks(w)) f(r, w, i);
    });
}

/// A query row's key blocks.
struct KeyBlocksOf {
    DT_HD int64_t operator()(const AttnRow& w) const { return attention_key_blocks(w.t); }
};

/// A thread per (query row, key block).
DT_HD void attention_forward_leaves_body(const GridPos& t, const float* qkv, const float* rowmax,
                                         float* out, float* rowsum, const AttnLeaves& L,
                                         const AttentionParams& p) {
    const float scale = attention_scale(p.D);
    for_each_row_block(t, p, KeyBlocksOf{}, [&](int64_t r, const AttnRow& w, int64_t kb) {
        if (w.t < p.q0) return;  // a cached row
        float pw[kAttnKeyBlock];
        const AttnBlock k =
            attention_forward_block(qkv, p, w.b, w.h, w.t, kb, rowmax[r], scale, pw);
        float* o = attention_out_row(out, p, w.b, w.h, w.t);
        float* const dst[2] = {o, nullptr};
        attention_leaf_to(AttnTerms{{pw, nullptr}, {k, k}, 1, true}, p, L, r, kb, dst, rowsum + r);
    });
}

/// A thread per query row: l and o from the leaves (kAtomic: accumulated in rowsum and out),
/// then out = o / l.
DT_HD void attention_forward_combine_body(const GridPos& t, const AttnLeaves& L,
                                          const uint32_t* orders, float* out, float* rowsum,
                                          const AttentionParams& p) {
    const int64_t W = p.D + 1;
    common::grid_stride(t, attention_rows(p), [&](int64_t r) {
        const AttnRow w = attention_row(p, r);
        if (w.t < p.q0) return;  // a cached row
        float* o = attention_out_row(out, p, w.b, w.h, w.t);
        if (p.accum.mode != common::AccumMode::kAtomic) {
            const int64_t n = attention_key_blocks(w.t);
            for (int64_t d = 0; d < p.D; ++d) o[d] = attention_total_of(L, p, r, W, n, d, orders);
            rowsum[r] = attention_total_of(L, p, r, W, n, p.D, orders);
        }
        for (int64_t d = 0; d < p.D; ++d) o[d] = o[d] / rowsum[r];  // ORDER: o / l
    });
}

// ---- backward ----

DT_HD void attention_di_body(const GridPos& t, const float* dout, const float* out, float* di,
                             const AttentionParams& p) {
    common::grid_stride(t, attention_rows(p), [&](int64_t r) {
        const AttnRow w = attention_row(p, r);
        di[r] = attention_di(dout, out, p, w.b, w.h, w.t);
    });
}

/// dQ: a thread per (query row, key block).
DT_HD void attention_dq_leaves_body(const GridPos& t, const float* qkv, const float* dout,
                                    const float* rowmax, const float* rowsum, const float* di,
                                    float* dqkv, const AttnLeaves& L, const AttentionParams& p) {
    const float scale = attention_scale(p.D);
    for_each_row_block(t, p, KeyBlocksOf{}, [&](int64_t r, const AttnRow& w, int64_t kb) {
        float ds[kAttnKeyBlock];
        const AttnBlock k = attention_dq_block(qkv, dout, p, w.b, w.h, w.t, kb, rowmax[r],
                                               rowsum[r], di[r], scale, ds);
        float* const dst[2] = {dqkv + (w.b * p.T + w.t) * attention_pitch(p) + w.h * p.D, nullptr};
        attention_leaf_to(AttnTerms{{ds, nullptr}, {k, k}, 1, false}, p, L, r, kb, dst, nullptr);
    });
}

/// dK and dV: a thread per (key row, query block), the row's i-th.
DT_HD void attention_dkv_leaves_body(const GridPos& t, const float* qkv, const float* dout,
                                     const float* rowmax, const float* rowsum, const float* di,
                                     float* dqkv, const AttnLeaves& L, const AttentionParams& p) {
    const float scale = attention_scale(p.D);
    const int64_t C = p.H * p.D;
    const auto query_blocks = [&p](const AttnRow& w) { return attention_query_blocks(w.t, p.T); };
    for_each_row_block(t, p, query_blocks, [&](int64_t r, const AttnRow& w, int64_t i) {
        float wk[kAttnQueryBlock], wv[kAttnQueryBlock];
        const float* g = nullptr;
        const AttnBlock kq = attention_dkv_block(qkv, dout, rowmax, rowsum, di, p, w.b, w.h, w.t, i,
                                                 scale, wk, wv, &g);
        float* dk = dqkv + (w.b * p.T + w.t) * attention_pitch(p) + C + w.h * p.D;
        float* const dst[2] = {dk, dk + C};
        attention_leaf_to(AttnTerms{{wk, wv}, {kq, AttnBlock{kq.n, g, C}}, 2, false}, p, L, r, i,
                          dst, nullptr);
    });
}

/// A thread per row: dQ_t (part 0) or dK_j, dV_j (parts 0, 1) from the row's leaves.
DT_HD void attention_grad_combine_body(const GridPos& t, const AttnLeaves& L,
                                       const uint32_t* orders, float* dqkv, bool keys,
                                       const AttentionParams& p) {
    const int64_t C = p.H * p.D, W = (keys ? 2 : 1) * p.D;
    common::grid_stride(t, attention_rows(p), [&](int64_t r) {
        const AttnRow w = attention_row(p, r);
        const int64_t n = keys ? attention_query_blocks(w.t, p.T) : attention_key_blocks(w.t);
        float* row = dqkv + (w.b * p.T + w.t) * attention_pitch(p) + (keys ? C : 0) + w.h * p.D;
        for (int64_t e = 0; e < W; ++e)
            row[e / p.D * C + e % p.D] = attention_total_of(L, p, r, W, n, e, orders);
    });
}

}  // namespace dt::kernels::cuda
