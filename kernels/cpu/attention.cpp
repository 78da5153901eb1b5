// SPDX-License-Identifier: MIT
// Causal self-attention on the CPU; recipe, modes and ORDER in kernels/attention.h, whose
// host-device pieces (scores, block weights, leaves, totals) this runs, as the CUDA kernels do.
// One thread owns a row at a time: a query row (out, rowmax, rowsum, dQ) or a key row (dK, dV),
// with its leaves in per-thread scratch. Items (sequence, head, block of rows) are split
// statically; no sum crosses threads, so no result depends on the thread count. The backward
// runs two passes: query rows (Di, then dQ), then key rows (dK, dV), which read every Di.
#include "kernels/attention.h"

#include <vector>

#include "kernels/common/atomic_add.h"
#include "kernels/cpu/isa_variants.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;

constexpr int64_t kBlockMax = kAttnKeyBlock > kAttnQueryBlock ? kAttnKeyBlock : kAttnQueryBlock;

/// One thread's scratch: the block weights and a row's leaves.
struct Scratch {
    float w[2][kBlockMax];
    std::vector<float> leaves;
    std::vector<common::KahanSum> kahan;
    std::vector<common::ExactAcc> exact;
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
    switch (a.mode) {
        case AccumMode::kTree:
        case AccumMode::kPermuted:
        case AccumMode::kAtomic: {
            s.leaves.resize(static_cast<std::size_t>(n * W));
            if (a.mode == AccumMode::kAtomic)
                for (int64_t e = 0; e < W; ++e) dst(e) = 0.0f;
            for (int64_t i = 0; i < n; ++i) {
                const Terms x = block(i);
                float* leaf = s.leaves.data() + i * W;
                for (int q = 0; q < parts; ++q) attention_leaf(x.w[q], x.k[q], D, leaf + q * D);
                if (with_sum) leaf[parts * D] = common::sum_sequential(x.w[0], x.k[0].n);
                // kAtomic: this row's thread adds its leaves as they finish: in block order.
                if (a.mode == AccumMode::kAtomic)
                    for (int64_t e = 0; e < W; ++e) common::atomic_add_float(&dst(e), leaf[e]);
            }
            if (a.mode == AccumMode::kAtomic) return;
            const uint32_t* order =
                a.mode == AccumMode::kPermuted ? orders + attention_order_at(n) : nullptr;
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

/// f(b, h, first row, end row) for every block of kRowsPerItem rows of every (b, h), the items
/// split statically over the threads, each with its own scratch.
constexpr int64_t kRowsPerItem = 16;
template <class F>
void for_each_item(const AttentionParams& p, F&& f) {
    const int64_t per = (p.T + kRowsPerItem - 1) / kRowsPerItem, items = p.B * p.H * per;
#pragma omp parallel if (items > 1 && p.T * p.T * p.D * p.B * p.H >= 65536)
    {
        Scratch s;
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; ++it) {
            const int64_t bh = it / per, r0 = it % per * kRowsPerItem;
            f(bh / p.H, bh % p.H, r0, r0 + kRowsPerItem < p.T ? r0 + kRowsPerItem : p.T, s);
        }
    }
}

// One item's rows of each pass, compiled per instruction-set path (isa_variants.h): the fma
// chains of kernels/attention.h become fused instructions on the AVX2 and AVX-512 paths (a
// library call on the baseline), with the same bits.
struct Pass {
    const float* qkv;
    const float* out;     // backward
    const float* rowmax;  // backward
    const float* rowsum;  // backward
    const float* dout;    // backward
    float* di;            // backward: Di of every row
    const AttentionParams* p;
    const uint32_t* orders;
    float scale;
};

DT_ISA_BODY void forward_rows_body(const Pass& a, float* out, float* rowmax, float* rowsum,
                                   int64_t b, int64_t h, int64_t t0, int64_t t1, Scratch& s) {
    const AttentionParams& p = *a.p;
    for (int64_t t = t0 < p.q0 ? p.q0 : t0; t < t1; ++t) {  // rows below q0: cached
        const int64_t r = (b * p.H + h) * p.T + t;
        const float m = attention_row_max(a.qkv, p, b, h, t, a.scale);
        float* o = attention_out_row(out, p, b, h, t);
        const auto block = [&](int64_t kb) {
            return Terms{{s.w[0], nullptr},
                         {attention_forward_block(a.qkv, p, b, h, t, kb, m, a.scale, s.w[0]), {}}};
        };
        row_totals(block, attention_key_blocks(t), p.D, 1, RowOut{{o, nullptr}, rowsum + r},
                   p.accum, a.orders, s);
        for (int64_t d = 0; d < p.D; ++d) o[d] = o[d] / rowsum[r];  // ORDER: o / l
        rowmax[r] = m;
    }
}
DT_ISA_FLAT_VARIANTS(void, forward_rows,
                     (const Pass& a, float* out, float* rowmax, float* rowsum, int64_t b, int64_t h,
                      int64_t t0, int64_t t1, Scratch& s),
                     (a, out, rowmax, rowsum, b, h, t0, t1, s))

// Query rows: Di_t, then dQ_t over key blocks.
DT_ISA_BODY void dq_rows_body(const Pass& a, float* dqkv, int64_t b, int64_t h, int64_t t0,
                              int64_t t1, Scratch& s) {
    const AttentionParams& p = *a.p;
    const int64_t pitch = attention_pitch(p);
    for (int64_t t = t0; t < t1; ++t) {
        const int64_t r = (b * p.H + h) * p.T + t;
        a.di[r] = attention_di(a.dout, a.out, p, b, h, t);
        const auto block = [&](int64_t kb) {
            const AttnBlock k = attention_dq_block(a.qkv, a.dout, p, b, h, t, kb, a.rowmax[r],
                                                   a.rowsum[r], a.di[r], a.scale, s.w[0]);
            return Terms{{s.w[0], nullptr}, {k, {}}};
        };
        float* dq = dqkv + (b * p.T + t) * pitch + h * p.D;
        row_totals(block, attention_key_blocks(t), p.D, 1, RowOut{{dq, nullptr}, nullptr}, p.accum,
                   a.orders, s);
    }
}
DT_ISA_FLAT_VARIANTS(void, dq_rows,
                     (const Pass& a, float* dqkv, int64_t b, int64_t h, int64_t t0, int64_t t1,
                      Scratch& s),
                     (a, dqkv, b, h, t0, t1, s))

// Key rows: dK_j and dV_j over query blocks (every Di is known).
DT_ISA_BODY void dkv_rows_body(const Pass& a, float* dqkv, int64_t b, int64_t h, int64_t j0,
                               int64_t j1, Scratch& s) {
    const AttentionParams& p = *a.p;
    const int64_t C = p.H * p.D, pitch = attention_pitch(p);
    for (int64_t j = j0; j < j1; ++j) {
        const auto block = [&](int64_t i) {
            const float* g = nullptr;
            const AttnBlock kq = attention_dkv_block(a.qkv, a.dout, a.rowmax, a.rowsum, a.di, p, b,
                                                     h, j, i, a.scale, s.w[0], s.w[1], &g);
            return Terms{{s.w[0], s.w[1]}, {kq, AttnBlock{kq.n, g, C}}};
        };
        float* dk = dqkv + (b * p.T + j) * pitch + C + h * p.D;
        row_totals(block, attention_query_blocks(j, p.T), p.D, 2, RowOut{{dk, dk + C}, nullptr},
                   p.accum, a.orders, s);
    }
}
DT_ISA_FLAT_VARIANTS(void, dkv_rows,
                     (const Pass& a, float* dqkv, int64_t b, int64_t h, int64_t j0, int64_t j1,
                      Scratch& s),
                     (a, dqkv, b, h, j0, j1, s))

}  // namespace

void attention_forward(const float* qkv, float* out, float* rowmax, float* rowsum,
                       const AttentionParams& p) {
    const std::vector<uint32_t> orders = orders_of(p);
    const Pass a{
        qkv, nullptr, nullptr, nullptr, nullptr, nullptr, &p, orders.data(), attention_scale(p.D)};
    for_each_item(p, [&](int64_t b, int64_t h, int64_t t0, int64_t t1, Scratch& s) {
        forward_rows(a, out, rowmax, rowsum, b, h, t0, t1, s);
    });
}

void attention_backward(const float* qkv, const float* out, const float* rowmax,
                        const float* rowsum, const float* dout, float* dqkv,
                        const AttentionParams& p) {
    const std::vector<uint32_t> orders = orders_of(p);
    std::vector<float> di(static_cast<std::size_t>(attention_rows(p)));
    const Pass a{
        qkv, out, rowmax, rowsum, dout, di.data(), &p, orders.data(), attention_scale(p.D)};
    for_each_item(p, [&](int64_t b, int64_t h, int64_t t0, int64_t t1, Scratch& s) {
        dq_rows(a, dqkv, b, h, t0, t1, s);
    });
    for_each_item(p, [&](int64_t b, int64_t h, int64_t j0, int64_t j1, Scratch& s) {
        dkv_rows(a, dqkv, b, h, j0, j1, s);
    });
}

}  // namespace dt::kernels::cpu
