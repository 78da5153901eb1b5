// SPDX-License-Identifier: MIT
// Causal self-attention on the CPU; recipe, modes and ORDER in kernels/attention.h, whose
// host-device pieces (blocks, leaves, totals) this runs, as the CUDA kernels do.
// An item is one (sequence, head); items are split statically over the threads, each thread
// with its own scratch; no sum crosses items, so no result depends on the thread count.
// Within an item the weights of a row (scores, p, P, dP, dS) are computed kLanes keys at a
// time from K^T and V^T packed once per item: every key keeps its own fma chain over d
// ascending, so each weight has the recipe's bits (attention_dot, attention_grad_pair), and
// the loops vectorize. The backward runs the query rows (Di, then dQ), then the key rows (dK,
// dV), whose weights are the columns of the P and dS the query rows left (up to kDenseMaxT
// tokens; past it each key row recomputes them, attention_dkv_block).
#include "kernels/attention.h"

#include <vector>

#include "kernels/common/atomic_add.h"
#include "kernels/cpu/isa_variants.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;

constexpr int64_t kBlockMax = kAttnKeyBlock > kAttnQueryBlock ? kAttnKeyBlock : kAttnQueryBlock;
constexpr int64_t kLanes = 64;        // keys per register block of the weight loops
constexpr int64_t kDenseMaxT = 1024;  // the backward keeps P and dS of an item up to this T

/// One thread's scratch: the block weights, a row's leaves, the item's packed K^T and V^T
/// (D, tp), a row's weights (tp each) and the dense backward's P and dS (T, tp).
struct Scratch {
    float w[2][kBlockMax];
    std::vector<float> leaves;
    std::vector<common::KahanSum> kahan;
    std::vector<common::ExactAcc> exact;
    int64_t tp = 0;  // T rounded up to kLanes
    std::vector<float> kt, vt, row, dp, P, dS;
};

/// A block's terms: up to two weighted-row parts of D elements each (w[q] over k[q]).
struct Terms {
    const float* w[2];
    AttnBlock k[2];
};

/// Where a row's totals go: part q's element d at part[q][d]; the weights' sum (forward's l,
/// of part 0's weights) at *sum when it is not null.
struct RowOut {
    float* part[2];
    float* sum;
};

/// attention_leaf's bits (out[d] = the fma chain from +0 of w[i] * row_i[d], i ascending), with
/// the loop over d innermost so that it vectorizes; for the common head sizes the D sums stay
/// in registers (kD = D), otherwise in `out` (kD = 0).
template <int64_t kD>
DT_ISA_BODY void leaf_rows_of(const float* w, const AttnBlock& k, int64_t D, float* out) {
    if constexpr (kD > 0) {
        float acc[kD] = {};
        for (int64_t i = 0; i < k.n; ++i) {
            const float wi = w[i];
            const float* row = k.rows + i * k.stride;
            for (int64_t d = 0; d < kD; ++d) acc[d] = fmaf(wi, row[d], acc[d]);
        }
        for (int64_t d = 0; d < kD; ++d) out[d] = acc[d];
    } else {
        for (int64_t d = 0; d < D; ++d) out[d] = 0.0f;
        for (int64_t i = 0; i < k.n; ++i) {
            const float wi = w[i];
            const float* row = k.rows + i * k.stride;
            for (int64_t d = 0; d < D; ++d) out[d] = fmaf(wi, row[d], out[d]);
        }
    }
}
DT_ISA_BODY void leaf_rows(const float* w, const AttnBlock& k, int64_t D, float* out) {
    switch (D) {
        case 16:
            return leaf_rows_of<16>(w, k, D, out);
        case 32:
            return leaf_rows_of<32>(w, k, D, out);
        case 64:
            return leaf_rows_of<64>(w, k, D, out);
        default:
            return leaf_rows_of<0>(w, k, D, out);
    }
}

/// The totals of one row over its n blocks (block(i) gives block i's terms) in mode a.mode,
/// written to `out`. W = parts * D (+ 1 with the sum) elements per leaf.
template <class Block>
DT_ISA_BODY void row_totals(const Block& block, int64_t n, int64_t D, int parts, const RowOut& out,
                            const common::AccumSpec& a, const uint32_t* orders, Scratch& s) {
    const bool with_sum = out.sum != nullptr;
    const int64_t W = parts * D + (with_sum ? 1 : 0);
    auto dst = [&](int64_t e) -> float& {
        return e < parts * D ? out.part[e / D][e % D] : *out.sum;
    };
    // A float leaf (tree, permuted, atomic): each part's fma chains, then the weights' sum.
    auto float_leaf = [&](const Terms& x, float* leaf) {
        for (int q = 0; q < parts; ++q) leaf_rows(x.w[q], x.k[q], D, leaf + q * D);
        if (with_sum) leaf[parts * D] = common::sum_sequential(x.w[0], x.k[0].n);
    };
    switch (a.mode) {
        case AccumMode::kTree: {
            // Each leaf pushed on a tree stack of rows (reduce_tree.h): T of every element at
            // once, the bits of attention_total's per-element tree.
            s.leaves.resize(static_cast<std::size_t>(common::tree_slots(n) * W));
            float* slots = s.leaves.data();
            for (int64_t i = 0; i < n; ++i) {
                float_leaf(block(i), slots + common::tree_leaf_slot(i) * W);
                common::tree_push(slots, W, 0, W, i);
            }
            common::tree_finish(slots, W, 0, W, n);
            for (int q = 0; q < parts; ++q)
                for (int64_t d = 0; d < D; ++d) out.part[q][d] = slots[q * D + d];
            if (with_sum) *out.sum = slots[parts * D];
            return;
        }
        case AccumMode::kPermuted:
        case AccumMode::kAtomic: {
            s.leaves.resize(static_cast<std::size_t>(n * W));
            if (a.mode == AccumMode::kAtomic)
                for (int64_t e = 0; e < W; ++e) dst(e) = 0.0f;
            for (int64_t i = 0; i < n; ++i) {
                float* leaf = s.leaves.data() + i * W;
                float_leaf(block(i), leaf);
                // kAtomic: this row's thread adds its leaves as they finish: in block order.
                if (a.mode == AccumMode::kAtomic)
                    for (int64_t e = 0; e < W; ++e) common::atomic_add_float(&dst(e), leaf[e]);
            }
            if (a.mode == AccumMode::kAtomic) return;
            const uint32_t* order = orders + attention_order_at(n);
            for (int64_t e = 0; e < W; ++e)
                dst(e) = attention_total(s.leaves.data(), n, W, e, a.mode, order);
            return;
        }
        case AccumMode::kKahan: {
            s.kahan.resize(static_cast<std::size_t>(n * W));
            for (int64_t i = 0; i < n; ++i) {
                const Terms x = block(i);
                common::KahanSum* leaf = s.kahan.data() + i * W;
                for (int q = 0; q < parts; ++q)
                    attention_leaf_kahan(x.w[q], x.k[q], D, leaf + q * D);
                if (with_sum) leaf[parts * D] = common::kahan_sum(x.w[0], x.k[0].n);
            }
            for (int64_t e = 0; e < W; ++e) dst(e) = attention_total_kahan(s.kahan.data(), n, W, e);
            return;
        }
        case AccumMode::kExact: {
            s.exact.resize(static_cast<std::size_t>(W));
            common::exact_init_row(s.exact.data(), W);
            for (int64_t i = 0; i < n; ++i) {
                const Terms x = block(i);
                for (int q = 0; q < parts; ++q)
                    for (int64_t d = 0; d < D; ++d)
                        attention_leaf_exact(x.w[q], x.k[q], d, s.exact[q * D + d]);
                if (with_sum)
                    for (int64_t j = 0; j < x.k[0].n; ++j)
                        common::exact_add(s.exact[parts * D], x.w[0][j]);
            }
            for (int64_t e = 0; e < W; ++e) dst(e) = common::exact_value(s.exact[e]);
            return;
        }
    }
}

/// The permutations of every leaf count (kPermuted; empty otherwise).
std::vector<uint32_t> orders_of(const AttentionParams& p) {
    if (p.accum.mode != AccumMode::kPermuted) return {};
    const int64_t most = attention_max_blocks(p.T);
    std::vector<uint32_t> table(static_cast<std::size_t>(attention_order_table_size(most)));
    for (int64_t n = 1; n <= most; ++n)
        common::permute_order(table.data() + attention_order_at(n), n, p.accum.permute_key);
    return table;
}

/// Every item (b, h) once, f(b, h, scratch), the items split statically over the threads.
template <class F>
void for_each_item(const AttentionParams& p, F&& f) {
    const int64_t items = p.B * p.H;
#pragma omp parallel if (items > 1 && p.T * p.T * p.D * p.B * p.H >= 65536)
    {
        Scratch s;
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; ++it) f(it / p.H, it % p.H, s);
    }
}

// The item bodies, compiled per instruction-set path (isa_variants.h): the fma chains become
// fused instructions on the AVX2 and AVX-512 paths (a library call on the baseline), with the
// same bits, and the weight loops vectorize.
struct Pass {
    const float* qkv;
    const float* out;     // backward
    const float* rowmax;  // backward
    const float* rowsum;  // backward
    const float* dout;    // backward
    float* di;            // backward: Di of every row (B, H, T)
    const AttentionParams* p;
    const uint32_t* orders;
    float scale;
};

/// Packs K^T (part 1) or V^T (part 2) of item (b, h) into dst (D, s.tp), columns past T zero.
DT_ISA_BODY void pack_transposed(const Pass& a, int part, int64_t b, int64_t h, Scratch& s,
                                 std::vector<float>& dst) {
    const AttentionParams& p = *a.p;
    dst.assign(static_cast<std::size_t>(p.D * s.tp), 0.0f);
    for (int64_t j = 0; j < p.T; ++j) {
        const float* x = attention_qkv(a.qkv, p, part, b, h, j);
        for (int64_t d = 0; d < p.D; ++d) dst[static_cast<std::size_t>(d * s.tp + j)] = x[d];
    }
}

/// out[j] = attention_dot(x, column j of bt) for j < n, bt (D, tp): kLanes keys at a time, each
/// its own fma chain from +0 over d ascending (the recipe's). out holds n rounded up to kLanes.
DT_ISA_BODY void dots(const float* x, const float* bt, int64_t D, int64_t tp, int64_t n,
                      float* out) {
    for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
        float acc[kLanes] = {};
        for (int64_t d = 0; d < D; ++d) {
            const float xd = x[d];
            const float* col = bt + d * tp + j0;
            for (int64_t i = 0; i < kLanes; ++i) acc[i] = fmaf(xd, col[i], acc[i]);
        }
        for (int64_t i = 0; i < kLanes; ++i) out[j0 + i] = acc[i];
    }
}

/// Scores s_tj = dot(q_t, k_j) * scale of keys j < n into out (attention_score's bits).
DT_ISA_BODY void scores(const Pass& a, int64_t b, int64_t h, int64_t t, int64_t n, const Scratch& s,
                        float* out) {
    dots(attention_qkv(a.qkv, *a.p, 0, b, h, t), s.kt.data(), a.p->D, s.tp, n, out);
    for (int64_t j = 0; j < n; ++j) out[j] = out[j] * a.scale;
}

DT_ISA_BODY void forward_item_body(const Pass& a, float* out, float* rowmax, float* rowsum,
                                   int64_t b, int64_t h, Scratch& s) {
    const AttentionParams& p = *a.p;
    s.tp = (p.T + kLanes - 1) / kLanes * kLanes;
    pack_transposed(a, 1, b, h, s, s.kt);
    s.row.resize(static_cast<std::size_t>(s.tp));
    float* w = s.row.data();
    for (int64_t t = p.q0; t < p.T; ++t) {  // rows below q0: cached
        const int64_t r = (b * p.H + h) * p.T + t;
        scores(a, b, h, t, t + 1, s, w);
        float m = w[0];  // the first maximum, j ascending (attention_row_max)
        for (int64_t j = 1; j <= t; ++j) m = w[j] > m ? w[j] : m;
        for (int64_t j = 0; j <= t; ++j) w[j] = common::dt_expf_select(w[j] - m);  // p_tj
        float* o = attention_out_row(out, p, b, h, t);
        const auto block = [&](int64_t kb) {
            const int64_t j0 = kb * kAttnKeyBlock;
            const int64_t n = j0 + kAttnKeyBlock < t + 1 ? kAttnKeyBlock : t + 1 - j0;
            return Terms{
                {w + j0, nullptr},
                {AttnBlock{n, attention_qkv(a.qkv, p, 2, b, h, j0), attention_pitch(p)}, {}}};
        };
        row_totals(block, attention_key_blocks(t), p.D, 1, RowOut{{o, nullptr}, rowsum + r},
                   p.accum, a.orders, s);
        for (int64_t d = 0; d < p.D; ++d) o[d] = o[d] / rowsum[r];  // ORDER: o / l
        rowmax[r] = m;
    }
}
DT_ISA_FLAT_VARIANTS(void, forward_item,
                     (const Pass& a, float* out, float* rowmax, float* rowsum, int64_t b, int64_t h,
                      Scratch& s),
                     (a, out, rowmax, rowsum, b, h, s))

/// Query row t: P_tj and dS_tj of keys j <= t into P and dS (attention_grad_pair's bits).
DT_ISA_BODY void grad_weights(const Pass& a, int64_t b, int64_t h, int64_t t, float di, Scratch& s,
                              float* P, float* dS) {
    const AttentionParams& p = *a.p;
    const int64_t r = (b * p.H + h) * p.T + t;
    const float m = a.rowmax[r], l = a.rowsum[r];
    scores(a, b, h, t, t + 1, s, P);
    for (int64_t j = 0; j <= t; ++j) P[j] = common::dt_expf_select(P[j] - m) / l;
    const float* g = a.dout + (b * p.T + t) * p.H * p.D + h * p.D;
    dots(g, s.vt.data(), p.D, s.tp, t + 1, s.dp.data());
    for (int64_t j = 0; j <= t; ++j)
        dS[j] = (P[j] * (s.dp[static_cast<std::size_t>(j)] - di)) * a.scale;  // ORDER: recipe's
}

DT_ISA_BODY void backward_item_body(const Pass& a, float* dqkv, int64_t b, int64_t h, Scratch& s) {
    const AttentionParams& p = *a.p;
    const int64_t C = p.H * p.D, pitch = attention_pitch(p), row0 = (b * p.H + h) * p.T;
    const bool dense = p.T <= kDenseMaxT;
    s.tp = (p.T + kLanes - 1) / kLanes * kLanes;
    pack_transposed(a, 1, b, h, s, s.kt);
    pack_transposed(a, 2, b, h, s, s.vt);
    const auto tp = static_cast<std::size_t>(s.tp);
    s.row.resize(2 * tp);
    s.dp.resize(tp);
    if (dense) s.P.resize(static_cast<std::size_t>(p.T) * tp), s.dS.resize(s.P.size());
    // Query rows: Di_t, the row's weights, dQ_t over key blocks.
    for (int64_t t = 0; t < p.T; ++t) {
        a.di[row0 + t] = attention_di(a.dout, a.out, p, b, h, t);
        float* P = dense ? s.P.data() + static_cast<std::size_t>(t) * tp : s.row.data();
        float* dS = dense ? s.dS.data() + static_cast<std::size_t>(t) * tp : s.row.data() + tp;
        grad_weights(a, b, h, t, a.di[row0 + t], s, P, dS);
        const auto block = [&](int64_t kb) {
            const int64_t j0 = kb * kAttnKeyBlock;
            const int64_t n = j0 + kAttnKeyBlock < t + 1 ? kAttnKeyBlock : t + 1 - j0;
            return Terms{{dS + j0, nullptr},
                         {AttnBlock{n, attention_qkv(a.qkv, p, 1, b, h, j0), pitch}, {}}};
        };
        float* dq = dqkv + (b * p.T + t) * pitch + h * p.D;
        row_totals(block, attention_key_blocks(t), p.D, 1, RowOut{{dq, nullptr}, nullptr}, p.accum,
                   a.orders, s);
    }
    // Key rows: dK_j and dV_j over query blocks, weights from the columns of dS and P.
    for (int64_t j = 0; j < p.T; ++j) {
        const auto block = [&](int64_t i) {
            if (!dense) {
                const float* g = nullptr;
                const AttnBlock kq = attention_dkv_block(a.qkv, a.dout, a.rowmax, a.rowsum, a.di, p,
                                                         b, h, j, i, a.scale, s.w[0], s.w[1], &g);
                return Terms{{s.w[0], s.w[1]}, {kq, AttnBlock{kq.n, g, C}}};
            }
            const int64_t qb = j / kAttnQueryBlock + i;
            const int64_t t0 = qb * kAttnQueryBlock > j ? qb * kAttnQueryBlock : j;
            const int64_t t1 = (qb + 1) * kAttnQueryBlock < p.T ? (qb + 1) * kAttnQueryBlock : p.T;
            for (int64_t t = t0; t < t1; ++t) {
                const std::size_t at =
                    static_cast<std::size_t>(t) * tp + static_cast<std::size_t>(j);
                s.w[0][t - t0] = s.dS[at];
                s.w[1][t - t0] = s.P[at];
            }
            const float* g = a.dout + (b * p.T + t0) * C + h * p.D;
            return Terms{{s.w[0], s.w[1]},
                         {AttnBlock{t1 - t0, attention_qkv(a.qkv, p, 0, b, h, t0), pitch},
                          AttnBlock{t1 - t0, g, C}}};
        };
        float* dk = dqkv + (b * p.T + j) * pitch + C + h * p.D;
        row_totals(block, attention_query_blocks(j, p.T), p.D, 2, RowOut{{dk, dk + C}, nullptr},
                   p.accum, a.orders, s);
    }
}
DT_ISA_FLAT_VARIANTS(void, backward_item,
                     (const Pass& a, float* dqkv, int64_t b, int64_t h, Scratch& s),
                     (a, dqkv, b, h, s))

}  // namespace

void attention_forward(const float* qkv, float* out, float* rowmax, float* rowsum,
                       const AttentionParams& p) {
    const std::vector<uint32_t> orders = orders_of(p);
    const Pass a{
        qkv, nullptr, nullptr, nullptr, nullptr, nullptr, &p, orders.data(), attention_scale(p.D)};
    for_each_item(p, [&](int64_t b, int64_t h, Scratch& s) {
        forward_item(a, out, rowmax, rowsum, b, h, s);
    });
}

void attention_backward(const float* qkv, const float* out, const float* rowmax,
                        const float* rowsum, const float* dout, float* dqkv,
                        const AttentionParams& p) {
    const std::vector<uint32_t> orders = orders_of(p);
    std::vector<float> di(static_cast<std::size_t>(attention_rows(p)));
    const Pass a{
        qkv, out, rowmax, rowsum, dout, di.data(), &p, orders.data(), attention_scale(p.D)};
    for_each_item(p, [&](int64_t b, int64_t h, Scratch& s) { backward_item(a, dqkv, b, h, s); });
}

}  // namespace dt::kernels::cpu
