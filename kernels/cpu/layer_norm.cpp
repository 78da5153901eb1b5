// SPDX-License-Identifier: MIT
// Layer normalisation on the CPU; recipe, modes and ORDER in kernels/layer_norm.h. Each token's
// row is owned by one loop iteration (forward, and dx in the backward): its row sums keep one
// accumulator per leaf, 32 side by side (vectorised across the leaves, never across a leaf's
// chain). dgamma and dbeta: work items (sequence b, block of features) own their leaves, summed
// over the sequence's tokens in ascending order, then each feature's B leaves are combined as
// the mode says (tree, kahan tree, permuted order, atomic adds); exact adds every term to
// per-item superaccumulators, merged per feature (into a split batch's, where given).
#include "kernels/layer_norm.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;
using common::AccumSpec;
using common::ExactAcc;
using common::KahanSum;

constexpr int64_t kParallelMin = 32768;  // elements below which one thread is faster
constexpr int64_t kLeaves = kLayerNormLeaves;
constexpr int64_t kGradBlock = 64;  // features per dgamma/dbeta work item (partition only)

using RowOrder = std::array<uint32_t, kLeaves>;

/// The row sums' leaf order of kPermuted: permute_order(L, key); unused by the other modes.
RowOrder row_order(const LayerNormParams& p) {
    RowOrder o{};
    if (p.accum.mode == AccumMode::kPermuted)
        common::permute_order(o.data(), layer_norm_leaves(p.C), p.accum.permute_key);
    return o;
}

// ---- R: the row sums of one token (kernels/layer_norm.h) ----

/// f(j, i) for every feature i of the row, j = i % 32 its leaf, i ascending: whole rounds of 32
/// first (a constant trip count, so the compiler vectorises across the leaves), then the tail.
template <class F>
void for_each_leaf_term(int64_t C, F&& f) {
    int64_t i0 = 0;
    for (; i0 + kLeaves <= C; i0 += kLeaves)
        for (int64_t j = 0; j < kLeaves; ++j) f(j, i0 + j);
    for (int64_t j = 0; i0 + j < C; ++j) f(j, i0 + j);
}

/// total[s] = R of term's sum s (term(i, t) writes t[0..S) for feature i) in the mode of spec.
template <int S, class Term>
void row_sums(const AccumSpec& spec, int64_t C, const RowOrder& order, const Term& term,
              float* total) {
    const int64_t L = layer_norm_leaves(C);
    switch (spec.mode) {
        case AccumMode::kExact:
            for (int s = 0; s < S; ++s) {  // ORDER: none (the exact sum, rounded once)
                total[s] = common::exact_sum_of([&](auto&& add) {
                    for (int64_t i = 0; i < C; ++i) {
                        float t[S];
                        term(i, t);
                        add(t[s]);
                    }
                });
            }
            return;
        case AccumMode::kKahan: {
            float sum[S][kLeaves] = {}, comp[S][kLeaves] = {};
            for_each_leaf_term(C, [&](int64_t j, int64_t i) {
                float t[S];
                term(i, t);
                for (int s = 0; s < S; ++s) {  // ORDER: kahan_add per leaf, index order
                    KahanSum k{sum[s][j], comp[s][j]};
                    common::kahan_add(k, t[s]);
                    sum[s][j] = k.sum, comp[s][j] = k.comp;
                }
            });
            for (int s = 0; s < S; ++s) {
                KahanSum leaf[kLeaves];
                for (int64_t j = 0; j < L; ++j) leaf[j] = KahanSum{sum[s][j], comp[s][j]};
                // ORDER: T_k over the L leaves, then kahan_value.
                total[s] = common::kahan_value(common::kahan_tree_combine(leaf, L));
            }
            return;
        }
        default: {  // tree, permuted; atomic as tree (a row is this thread's alone)
            float acc[S][kLeaves] = {};
            for_each_leaf_term(C, [&](int64_t j, int64_t i) {
                float t[S];
                term(i, t);
                for (int s = 0; s < S; ++s) acc[s][j] = acc[s][j] + t[s];  // ORDER: leaf chain
            });
            for (int s = 0; s < S; ++s)
                total[s] = spec.mode == AccumMode::kPermuted
                               ? common::permuted_sum(acc[s], order.data(), L)  // ORDER: o
                               : common::reduce_tree_combine(acc[s], L);        // ORDER: T
            return;
        }
    }
}

// ---- G: dgamma and dbeta, the sums over tokens ----

/// Work items (sequence b, feature block k) in b-major order: at one thread every feature's
/// leaves are made in sequence order. f(b, c0, c1) for every item.
template <class F>
void for_each_grad_item(const LayerNormParams& p, F&& f) {
    const int64_t B = p.M / p.T, blocks = (p.C + kGradBlock - 1) / kGradBlock;
#pragma omp parallel for schedule(static) if (p.M * p.C >= kParallelMin)
    for (int64_t it = 0; it < B * blocks; ++it) {
        const int64_t b = it / blocks, c0 = (it % blocks) * kGradBlock;
        f(b, c0, std::min(p.C, c0 + kGradBlock));
    }
}

/// term(m, c, t): t[0] = dy, t[1] = dy * xhat at token m, feature c.
struct GradTerm {
    const float *dy, *x, *mean, *rstd;
    int64_t C;
    void operator()(int64_t m, int64_t c, float* t) const {
        const float d = dy[m * C + c];
        t[0] = d;
        t[1] = d * layer_norm_xhat(x[m * C + c], mean[m], rstd[m]);
    }
};

/// Leaves [s][b][c] of the float modes: sequence b's tokens in ascending order from +0.
std::vector<float> grad_leaves(const LayerNormParams& p, const GradTerm& term) {
    const int64_t B = p.M / p.T, C = p.C;
    std::vector<float> leaves(static_cast<std::size_t>(2 * B * C), 0.0f);
    float* l = leaves.data();
    for_each_grad_item(p, [&](int64_t b, int64_t c0, int64_t c1) {
        float* l0 = l + b * C;
        float* l1 = l + (B + b) * C;
        for (int64_t m = b * p.T; m < (b + 1) * p.T; ++m)
            for (int64_t c = c0; c < c1; ++c) {
                float t[2];
                term(m, c, t);
                l0[c] = l0[c] + t[0];  // ORDER: tokens of the sequence ascending
                l1[c] = l1[c] + t[1];
            }
    });
    return leaves;
}

/// Kahan leaves [s][b][c]: kahan_add over the sequence's tokens ascending from (+0, +0).
std::vector<KahanSum> grad_kahan_leaves(const LayerNormParams& p, const GradTerm& term) {
    const int64_t B = p.M / p.T, C = p.C;
    std::vector<float> sum(static_cast<std::size_t>(2 * B * C), 0.0f), comp(sum.size(), 0.0f);
    float *s = sum.data(), *k = comp.data();
    for_each_grad_item(p, [&](int64_t b, int64_t c0, int64_t c1) {
        for (int64_t m = b * p.T; m < (b + 1) * p.T; ++m)
            for (int64_t c = c0; c < c1; ++c) {
                float t[2];
                term(m, c, t);
                for (int64_t q = 0; q < 2; ++q) {  // ORDER: kahan_add, tokens ascending
                    const int64_t at = (q * B + b) * C + c;
                    KahanSum a{s[at], k[at]};
                    common::kahan_add(a, t[q]);
                    s[at] = a.sum, k[at] = a.comp;
                }
            }
    });
    std::vector<KahanSum> leaves(sum.size());
    for (std::size_t i = 0; i < sum.size(); ++i) leaves[i] = KahanSum{sum[i], comp[i]};
    return leaves;
}

/// kExact: an ExactAcc per (item, sum, feature) fed through exact segments (exact_stream_add),
/// merged per feature, rounded once; or, for a part of a split batch, added unrounded to
/// p.exact_dgamma / p.exact_dbeta (B units). ORDER: none (integer sums).
void grad_exact(const LayerNormParams& p, const GradTerm& term, float* dgamma, float* dbeta) {
    const int64_t B = p.M / p.T, C = p.C;
    std::vector<ExactAcc> accs(static_cast<std::size_t>(2 * B * C));
    for_each_grad_item(p, [&](int64_t b, int64_t c0, int64_t c1) {
        std::vector<common::ExactShort> seg(static_cast<std::size_t>(2 * (c1 - c0)));
        for (common::ExactShort& e : seg) common::exact_short_init(e);
        ExactAcc* a = accs.data() + b * C;
        for (int64_t c = c0; c < c1; ++c)
            common::exact_init(a[c]), common::exact_init(a[B * C + c]);
        for (int64_t m = b * p.T; m < (b + 1) * p.T; ++m) {
            for (int64_t c = c0; c < c1; ++c) {
                float t[2];
                term(m, c, t);
                common::exact_stream_add(a[c], seg[static_cast<std::size_t>(2 * (c - c0))], t[0]);
                common::exact_stream_add(a[B * C + c],
                                         seg[static_cast<std::size_t>(2 * (c - c0) + 1)], t[1]);
            }
            // 1.5 units per term at most (accum_exact_short.h): normalise every 2^29 tokens.
            if (((m - b * p.T) & ((int64_t{1} << 29) - 1)) == (int64_t{1} << 29) - 1)
                for (int64_t c = c0; c < c1; ++c)
                    common::exact_normalise(a[c]), common::exact_normalise(a[B * C + c]);
        }
        for (int64_t c = c0; c < c1; ++c) {
            for (int64_t q = 0; q < 2; ++q) {
                common::exact_stream_flush(a[q * B * C + c],
                                           seg[static_cast<std::size_t>(2 * (c - c0) + q)]);
                common::exact_normalise(a[q * B * C + c]);  // 1 unit: B < 2^31 merges below
            }
        }
    });
    for (int64_t c = 0; c < C; ++c) {
        ExactAcc g, d;
        common::exact_init(g), common::exact_init(d);
        for (int64_t b = 0; b < B; ++b) {
            common::exact_merge(d, accs[static_cast<std::size_t>(b * C + c)]);
            common::exact_merge(g, accs[static_cast<std::size_t>((B + b) * C + c)]);
        }
        if (p.exact_dbeta != nullptr) {
            common::exact_merge(p.exact_dbeta[c], d);
        } else {
            dbeta[c] = common::exact_value(d);
        }
        if (p.exact_dgamma != nullptr) {
            common::exact_merge(p.exact_dgamma[c], g);
        } else {
            dgamma[c] = common::exact_value(g);
        }
    }
}

/// dgamma and dbeta in the mode of p.accum.
void grad_totals(const LayerNormParams& p, const GradTerm& term, float* dgamma, float* dbeta) {
    const int64_t B = p.M / p.T, C = p.C;
    float* out[2] = {dbeta, dgamma};
    switch (p.accum.mode) {
        case AccumMode::kExact:
            grad_exact(p, term, dgamma, dbeta);
            return;
        case AccumMode::kKahan: {
            const std::vector<KahanSum> leaves = grad_kahan_leaves(p, term);
            for (int64_t q = 0; q < 2; ++q)  // ORDER: T_k over the B leaves, then kahan_value
                for (int64_t c = 0; c < C; ++c)
                    out[q][c] = common::kahan_value(
                        common::kahan_tree_combine(leaves.data() + q * B * C + c, B, C));
            return;
        }
        case AccumMode::kAtomic: {
            // No ORDER on purpose: each item's leaves land as the threads finish them.
            for (int64_t c = 0; c < C; ++c) dbeta[c] = 0.0f, dgamma[c] = 0.0f;
            for_each_grad_item(p, [&](int64_t b, int64_t c0, int64_t c1) {
                float l[2][kGradBlock] = {};
                for (int64_t m = b * p.T; m < (b + 1) * p.T; ++m)
                    for (int64_t c = c0; c < c1; ++c) {
                        float t[2];
                        term(m, c, t);
                        l[0][c - c0] = l[0][c - c0] + t[0];  // ORDER: as the tree's leaves
                        l[1][c - c0] = l[1][c - c0] + t[1];
                    }
                for (int64_t c = c0; c < c1; ++c)
                    for (int q = 0; q < 2; ++q) common::atomic_add_float(out[q] + c, l[q][c - c0]);
            });
            return;
        }
        case AccumMode::kTree:
        case AccumMode::kPermuted: {
            const std::vector<float> leaves = grad_leaves(p, term);
            std::vector<uint32_t> order(static_cast<std::size_t>(B));
            if (p.accum.mode == AccumMode::kPermuted)
                common::permute_order(order.data(), B, p.accum.permute_key);
            for (int64_t q = 0; q < 2; ++q)
                for (int64_t c = 0; c < C; ++c) {
                    const float* leaf = leaves.data() + q * B * C + c;
                    out[q][c] = p.accum.mode == AccumMode::kTree
                                    ? common::reduce_tree_combine(leaf, B, C)          // ORDER: T
                                    : common::permuted_sum(leaf, order.data(), B, C);  // pi
                }
            return;
        }
    }
}

/// f(m, count, order) for every token m (a token's row sums belong to one thread), the tokens
/// split statically over the threads; nothing for an empty input.
template <class F>
void for_each_token(const LayerNormParams& p, F&& f) {
    if (p.M <= 0 || p.C <= 0) return;
    const float count = static_cast<float>(p.C);
    const RowOrder order = row_order(p);
#pragma omp parallel for schedule(static) if (p.M * p.C >= kParallelMin)
    for (int64_t m = 0; m < p.M; ++m) f(m, count, order);
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd, const LayerNormParams& p) {
    const int64_t C = p.C;
    for_each_token(p, [&](int64_t m, float count, const RowOrder& order) {
        const float* xr = x + m * C;
        float s;
        row_sums<1>(
            p.accum, C, order, [xr](int64_t i, float* t) { t[0] = xr[i]; }, &s);
        const float mu = s / count;  // ORDER: mean = R(x) / count
        row_sums<1>(
            p.accum, C, order,
            [xr, mu](int64_t i, float* t) {
                const float d = xr[i] - mu;
                t[0] = d * d;
            },
            &s);
        const float rs = layer_norm_rstd(s / count, p.eps);  // ORDER: var = R(d * d) / count
        mean[m] = mu;
        rstd[m] = rs;
        float* yr = y + m * C;
        for (int64_t i = 0; i < C; ++i)
            yr[i] = layer_norm_y(layer_norm_xhat(xr[i], mu, rs), gamma[i], beta[i]);
    });
}

void layer_norm_backward(const float* dy, const float* x, const float* mean, const float* rstd,
                         const float* gamma, float* dx, float* dgamma, float* dbeta,
                         const LayerNormParams& p) {
    if (p.M <= 0 || p.C <= 0) return;
    const int64_t C = p.C;
    for_each_token(p, [&](int64_t m, float count, const RowOrder& order) {
        const float *xr = x + m * C, *dyr = dy + m * C;
        const float mu = mean[m], rs = rstd[m];
        float s[2];
        row_sums<2>(
            p.accum, C, order,
            [=](int64_t i, float* t) {
                const float g = dyr[i] * gamma[i];
                t[0] = g;
                t[1] = g * layer_norm_xhat(xr[i], mu, rs);
            },
            s);
        const float m1 = s[0] / count, m2 = s[1] / count;  // ORDER: R(g) / count, R(g xhat) / count
        float* d = dx + m * C;
        for (int64_t i = 0; i < C; ++i)
            d[i] = layer_norm_dx(dyr[i] * gamma[i], layer_norm_xhat(xr[i], mu, rs), m1, m2, rs);
    });
    grad_totals(p, GradTerm{dy, x, mean, rstd, C}, dgamma, dbeta);
}

}  // namespace dt::kernels::cpu
