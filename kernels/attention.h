// SPDX-License-Identifier: MIT
// Contract of causal multi-head self-attention (GPT-2's, llm.c's layout). C = H * D.
//   qkv (B, T, 3C): per token the queries of every head, then the keys, then the values; head h
//   uses columns h*D .. h*D+D-1 of each third. out (B, T, C); rowmax, rowsum (B, H, T): per
//   (sequence b, head h, query t) the softmax's max m and sum l. dout (B, T, C), dqkv (B, T, 3C).
// Query t sees keys 0..t. Masked keys are skipped: no exp(-inf) term and no zero enters a sum.
// So row t's bits are those of a KV-cache decode step over keys 0..t, whatever T is.
// Blocks are fixed by index, never by T or B: key block kb holds keys kb*KB .. kb*KB+KB-1
// (KB = kAttnKeyBlock), query block qb holds queries qb*QB .. qb*QB+QB-1 (QB = kAttnQueryBlock).
// Query t has nk(t) = t / KB + 1 key blocks, the last one cut at key t. Key j has the query
// blocks j/QB .. (T-1)/QB, the first one cut at query j and the last one at query T-1.
//
// Numeric recipe, the same on every device (exp from kernels/common/fast_math.h, no libm):
//   ORDER: scale = 1 / sqrtf(float(D)): sqrt and quotient each correctly rounded, once per call.
//   ORDER: s_tj = dot(q_t, k_j) * scale, dot = fma chain from +0 over d ascending, one multiply.
//   m_t = the first maximum of s_tj over j = 0..t ascending (exact: a first pass over the keys).
//   ORDER: p_tj = dt_expf(s_tj - m_t).
//   l_t = sum of p_tj, o_td = sum of p_tj * v_jd over j = 0..t: site attn.fwd (below), leaves
//   one per key block;  ORDER: out_td = o_td / l_t (one division). rowmax = m_t, rowsum = l_t.
// Backward, from the saved m, l and out:
//   ORDER: P_tj = dt_expf(s_tj - m_t) / l_t;  dP_tj = dot(dout_t, v_j);  Di_t = dot(dout_t, out_t)
//   (fma chains over d from +0);  dS_tj = (P_tj * (dP_tj - Di_t)) * scale.
//   Site attn.grad: dQ_t = sum over j <= t of dS_tj k_j (leaves per key block);
//   dK_j = sum over t >= j of dS_tj q_t and dV_j = sum over t >= j of P_tj dout_t (leaves per
//   query block). These are the sums FlashAttention leaves to atomics: here each has a mode.
// The site's mode (p.accum) decides every sum above, each over its leaves L_0 .. L_{n-1}, in
// block order, each leaf over its block's terms in index order (keys j, or queries t):
//   kTree      ORDER: a sum of weights (l) is +0 + w_0 + w_1 + ... ; a weighted sum (o, dQ,
//              dK, dV) is the fma chain acc = fma(w_i, row_i[d], acc) from +0.
//              ORDER: total = T(L_0, ..., L_{n-1}), the pairwise tree of reduce_tree.h.
//   kKahan     a leaf is kahan_add of its terms (products rounded) from (+0, +0); the total is
//              kahan_value of the kahan tree of the leaves (accum_kahan.h).
//   kExact     the exact sum of every term (the rounded products, the p_tj) rounded once
//              (accum_exact.h): no order, no leaves.
//   kPermuted  leaves as kTree. ORDER: total = +0 + L_o[0] + L_o[1] + ...,
//              o = permute_order(n, accum.permute_key): one order per leaf count n in a call.
//   kAtomic    leaves as kTree, atomic-added into the zeroed total as they finish. On the CPU one
//              thread owns a row, so they arrive in block order: +0 + L_0 + L_1 + ... . A GPU
//              races the leaves of a row from several threads: nondeterministic on purpose.
// What stays the same in every mode: s, m, p, P, dP, Di, dS, so rowmax, and out's division.
// Batch invariance: every sum of a row runs over that sequence's tokens with blocks fixed by
// index, so a row's bits depend only on its sequence's qkv (and dout), on the mode and key, and
// for dK, dV on T; never on B, on other sequences, or on how a device cuts the work.
// A KV-cache decode step gives row t's bits when it runs this recipe over keys 0..t: the max
// first, then the sums, in the same key blocks (the last one cut at t), mode and key.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/fast_math.h"
#include "kernels/common/hd.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels {

struct AttentionParams {
    int64_t B = 0, T = 0, H = 0, D = 0;
    // attention_forward only: queries t < q0 are not computed (a KV cache's tokens, whose rows
    // are known). out then holds only the rows computed, (B, T - q0, C) (attention_out_row);
    // rowmax and rowsum keep their (B, H, T) layout, rows t < q0 left as they are (kAtomic
    // zeroes every row of rowsum first). Rows t >= q0 get the bits of a call with q0 = 0.
    int64_t q0 = 0;
    // attn.fwd in attention_forward, attn.grad in attention_backward; see above.
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);
};

inline constexpr int64_t kAttnKeyBlock = 32;    // keys per leaf (KB)
inline constexpr int64_t kAttnQueryBlock = 32;  // queries per leaf (QB)

// ---- the recipe's pieces, host-device: what cpu:: and cuda:: both run ----

/// ORDER: 1 / sqrtf(float(D)), each step correctly rounded (IEEE on host and device).
DT_HD float attention_scale(int64_t D) { return 1.0f / sqrtf(static_cast<float>(D)); }

/// Floats per token of qkv (3C).
DT_HD int64_t attention_pitch(const AttentionParams& p) { return 3 * p.H * p.D; }
/// Rows of rowmax/rowsum: r = (b * H + h) * T + t.
DT_HD int64_t attention_rows(const AttentionParams& p) { return p.B * p.H * p.T; }

/// q (part 0), k (1) or v (2) of head h at token (b, t).
DT_HD const float* attention_qkv(const float* qkv, const AttentionParams& p, int part, int64_t b,
                                 int64_t h, int64_t t) {
    return qkv + (b * p.T + t) * attention_pitch(p) + part * p.H * p.D + h * p.D;
}

/// The forward's output of head h at query (b, t >= q0): out is (B, T - q0, C).
DT_HD float* attention_out_row(float* out, const AttentionParams& p, int64_t b, int64_t h,
                               int64_t t) {
    return out + (b * (p.T - p.q0) + t - p.q0) * p.H * p.D + h * p.D;
}

DT_HD int64_t attention_key_blocks(int64_t t) { return t / kAttnKeyBlock + 1; }
DT_HD int64_t attention_query_blocks(int64_t j, int64_t T) {
    return (T - 1) / kAttnQueryBlock - j / kAttnQueryBlock + 1;
}
/// The most leaves of any row: ceil(T / KB) or ceil(T / QB).
DT_HD int64_t attention_max_blocks(int64_t T) {
    const int64_t k = (T + kAttnKeyBlock - 1) / kAttnKeyBlock;
    const int64_t q = (T + kAttnQueryBlock - 1) / kAttnQueryBlock;
    return k > q ? k : q;
}

/// ORDER: acc = +0; acc = fma(a[d], b[d], acc) for d ascending.
DT_HD float attention_dot(const float* a, const float* b, int64_t D) {
    float acc = 0.0f;
    for (int64_t d = 0; d < D; ++d) acc = fmaf(a[d], b[d], acc);
    return acc;
}

/// s_tj of head h in sequence b.
DT_HD float attention_score(const float* qkv, const AttentionParams& p, int64_t b, int64_t h,
                            int64_t t, int64_t j, float scale) {
    return attention_dot(attention_qkv(qkv, p, 0, b, h, t), attention_qkv(qkv, p, 1, b, h, j),
                         p.D) *
           scale;
}

/// m_t: the first maximum of s_tj over j = 0..t ascending.
DT_HD float attention_row_max(const float* qkv, const AttentionParams& p, int64_t b, int64_t h,
                              int64_t t, float scale) {
    float m = attention_score(qkv, p, b, h, t, 0, scale);
    for (int64_t j = 1; j <= t; ++j) {
        const float s = attention_score(qkv, p, b, h, t, j, scale);
        m = s > m ? s : m;
    }
    return m;
}

/// A block's terms: n weights w[0..n) and the rows they weigh, row i at rows + i * stride.
struct AttnBlock {
    int64_t n;
    const float* rows;
    int64_t stride;
};

/// Forward, key block kb of query t: w[i] = p_tj for j = kb*KB + i, the value rows v_j.
DT_HD AttnBlock attention_forward_block(const float* qkv, const AttentionParams& p, int64_t b,
                                        int64_t h, int64_t t, int64_t kb, float m, float scale,
                                        float* w) {
    const int64_t j0 = kb * kAttnKeyBlock;
    const int64_t j1 = j0 + kAttnKeyBlock < t + 1 ? j0 + kAttnKeyBlock : t + 1;
    for (int64_t j = j0; j < j1; ++j)
        w[j - j0] = common::dt_expf(attention_score(qkv, p, b, h, t, j, scale) - m);
    return AttnBlock{j1 - j0, attention_qkv(qkv, p, 2, b, h, j0), attention_pitch(p)};
}

/// Backward, P_tj and dS_tj of one (query t, key j) pair (recipe above; di = Di_t).
struct AttnGradPair {
    float prob, ds;
};
DT_HD AttnGradPair attention_grad_pair(const float* qkv, const float* dout,
                                       const AttentionParams& p, int64_t b, int64_t h, int64_t t,
                                       int64_t j, float m, float l, float di, float scale) {
    const float prob = common::dt_expf(attention_score(qkv, p, b, h, t, j, scale) - m) / l;
    const float* g = dout + (b * p.T + t) * p.H * p.D + h * p.D;
    const float dp = attention_dot(g, attention_qkv(qkv, p, 2, b, h, j), p.D);
    return AttnGradPair{prob, (prob * (dp - di)) * scale};  // ORDER: (P * (dP - Di)) * scale
}

/// Di_t = dot(dout_t, out_t) of head h.
DT_HD float attention_di(const float* dout, const float* out, const AttentionParams& p, int64_t b,
                         int64_t h, int64_t t) {
    const int64_t at = (b * p.T + t) * p.H * p.D + h * p.D;
    return attention_dot(dout + at, out + at, p.D);
}

/// dQ, key block kb of query t: w[i] = dS_tj for j = kb*KB + i, the key rows k_j.
DT_HD AttnBlock attention_dq_block(const float* qkv, const float* dout, const AttentionParams& p,
                                   int64_t b, int64_t h, int64_t t, int64_t kb, float m, float l,
                                   float di, float scale, float* w) {
    const int64_t j0 = kb * kAttnKeyBlock;
    const int64_t j1 = j0 + kAttnKeyBlock < t + 1 ? j0 + kAttnKeyBlock : t + 1;
    for (int64_t j = j0; j < j1; ++j)
        w[j - j0] = attention_grad_pair(qkv, dout, p, b, h, t, j, m, l, di, scale).ds;
    return AttnBlock{j1 - j0, attention_qkv(qkv, p, 1, b, h, j0), attention_pitch(p)};
}

/// dK and dV, the i-th query block of key j: wk[i] = dS_tj, wv[i] = P_tj for the block's t
/// ascending; the query rows q_t (returned) and the rows dout_t (*grows, stride C).
/// rowmax, rowsum and di are per row (B, H, T).
DT_HD AttnBlock attention_dkv_block(const float* qkv, const float* dout, const float* rowmax,
                                    const float* rowsum, const float* di, const AttentionParams& p,
                                    int64_t b, int64_t h, int64_t j, int64_t i, float scale,
                                    float* wk, float* wv, const float** grows) {
    const int64_t qb = j / kAttnQueryBlock + i;
    const int64_t t0 = qb * kAttnQueryBlock > j ? qb * kAttnQueryBlock : j;
    const int64_t t1 = (qb + 1) * kAttnQueryBlock < p.T ? (qb + 1) * kAttnQueryBlock : p.T;
    const int64_t row0 = (b * p.H + h) * p.T;
    for (int64_t t = t0; t < t1; ++t) {
        const AttnGradPair g = attention_grad_pair(qkv, dout, p, b, h, t, j, rowmax[row0 + t],
                                                   rowsum[row0 + t], di[row0 + t], scale);
        wk[t - t0] = g.ds;
        wv[t - t0] = g.prob;
    }
    *grows = dout + (b * p.T + t0) * p.H * p.D + h * p.D;
    return AttnBlock{t1 - t0, attention_qkv(qkv, p, 0, b, h, t0), attention_pitch(p)};
}

// ---- leaves and totals, per mode (out[d] for d < D, elements `step` apart) ----

/// kTree, kPermuted, kAtomic leaf. ORDER: out[d] = fma chain from +0 of w[i] * row_i[d], i
/// ascending.
DT_HD void attention_leaf(const float* w, const AttnBlock& k, int64_t D, float* out,
                          int64_t step = 1) {
    for (int64_t d = 0; d < D; ++d) {
        float acc = 0.0f;
        for (int64_t i = 0; i < k.n; ++i) acc = fmaf(w[i], k.rows[i * k.stride + d], acc);
        out[d * step] = acc;
    }
}

/// kKahan leaf. ORDER: kahan_add of the rounded products w[i] * row_i[d] from (+0, +0), i
/// ascending.
DT_HD void attention_leaf_kahan(const float* w, const AttnBlock& k, int64_t D,
                                common::KahanSum* out, int64_t step = 1) {
    for (int64_t d = 0; d < D; ++d) {
        common::KahanSum acc = common::kahan_zero();
        for (int64_t i = 0; i < k.n; ++i) common::kahan_add(acc, w[i] * k.rows[i * k.stride + d]);
        out[d * step] = acc;
    }
}

/// kExact: adds the rounded products w[i] * row_i[d] of element d to a (no ORDER).
DT_HD void attention_leaf_exact(const float* w, const AttnBlock& k, int64_t d,
                                common::ExactAcc& a) {
    for (int64_t i = 0; i < k.n; ++i) common::exact_add(a, w[i] * k.rows[i * k.stride + d]);
}

/// Element e of a total over n float leaves, leaf i's element at leaves[i * W + e]: kTree's
/// tree, or kPermuted's order (order: the n-leaf permutation).
DT_HD float attention_total(const float* leaves, int64_t n, int64_t W, int64_t e,
                            common::AccumMode mode, const uint32_t* order) {
    if (mode == common::AccumMode::kPermuted)
        return common::permuted_sum(leaves + e, order, n, W);  // ORDER: permuted
    return common::reduce_tree_combine(leaves + e, n, W);      // ORDER: T
}

/// kKahan's total of element e over n KahanSum leaves (layout as attention_total).
DT_HD float attention_total_kahan(const common::KahanSum* leaves, int64_t n, int64_t W, int64_t e) {
    return common::kahan_value(common::kahan_tree_combine(leaves + e, n, W));
}

/// kPermuted: the permutations of n = 1 .. max_blocks leaves, that of n at table + n(n-1)/2.
DT_HD int64_t attention_order_at(int64_t n) { return n * (n - 1) / 2; }
DT_HD int64_t attention_order_table_size(int64_t max_blocks) {
    return attention_order_at(max_blocks + 1);
}

namespace ref {
inline void attention_forward(const double* qkv, double* out, double* rowmax, double* rowsum,
                              const AttentionParams& p);
inline void attention_backward(const double* qkv, const double* dout, double* dqkv,
                               const AttentionParams& p);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/attention.cpp) and cuda::
// (kernels/cuda/attention.cu: device pointers, the engine's stream).
//   attention_forward   qkv (B, T, 3C) -> out (B, T, C), rowmax, rowsum (B, H, T); attn.fwd.
//   attention_backward  qkv, out, rowmax, rowsum (the forward's), dout (B, T, C) -> dqkv
//                       (B, T, 3C), overwritten; attn.grad.
#define DT_ATTENTION_KERNELS                                                           \
    void attention_forward(const float* qkv, float* out, float* rowmax, float* rowsum, \
                           const AttentionParams& p);                                  \
    void attention_backward(const float* qkv, const float* out, const float* rowmax,   \
                            const float* rowsum, const float* dout, float* dqkv,       \
                            const AttentionParams& p);

namespace cpu {
DT_ATTENTION_KERNELS
}  // namespace cpu

namespace cuda {
DT_ATTENTION_KERNELS
}  // namespace cuda

#undef DT_ATTENTION_KERNELS

}  // namespace dt::kernels
