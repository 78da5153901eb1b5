// SPDX-License-Identifier: MIT
// The `tree` reduction recipe: partial sums ("leaves") combined by one fixed pairwise tree.
//
// ORDER: for n leaves p[0..n) the tree is left-complete:
//   T(p[l..h)) = p[l]                                  if h - l == 1
//              = T(p[l..l+s)) + T(p[l+s..h))          s = largest power of two < h - l
// e.g. n=3: (p0+p1)+p2, n=4: (p0+p1)+(p2+p3), n=5: ((p0+p1)+(p2+p3))+p4,
//      n=7: ((p0+p1)+(p2+p3)) + ((p4+p5)+p6).
// It is evaluated as a binary counter: leaf c (0-based) is written to slot popcount(c); then, for
// each trailing one bit of c, slot[d-1] = slot[d-1] + slot[d] (left operand first) and d -= 1. At
// the end the popcount(n) remaining slots are folded right to left: slot[d-1] = slot[d-1] +
// slot[d]. This yields exactly T above and needs only floor(log2 n) + 2 slots, so leaves can be
// produced one at a time (or in waves) without storing all of them. The shape depends on n alone,
// never on thread count or launch geometry, which is why results do not depend on them. Blocks: for
// any power of two B, T(p[0..n)) = T(b[0..m)) with b[j] = T(p[jB..min(jB + B, n))) and m = ceil(n /
// B): every split of T at or above size B falls on a multiple of B. With B = 2 at every level that
// is pairs, then pairs of pairs, ... (tree_of_at_most_8); tree_sum_push_8 (B = 8) and the CUDA
// per-channel combine (kernels/cuda/channel_combine_block.h) rest on it.
//
// Which leaves a kernel uses is part of its recipe (kernels/README.md): for reductions across the
// samples of a batch, one leaf per sample, summed in index order inside the sample.
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// Slots a tree stack needs for n leaves.
DT_HD int tree_slots(int64_t n) {
    int s = 1;
    while ((int64_t{1} << (s - 1)) <= n && s < 64) ++s;
    return s + 1;
}

/// Slot that leaf number `count` (0-based) must be written to before tree_push.
DT_HD int tree_leaf_slot(int64_t count) { return popcount64(static_cast<uint64_t>(count)); }

/// The tree's merge of floats. ORDER: left = left + right.
struct FloatPlus {
    DT_HD void operator()(float& left, const float& right) const { left = left + right; }
};

// ---- the tree stack, once for every value type and merge (tree: floats and +; kahan:
// KahanSums and kahan_merge, accum_kahan.h). merge(left, right) sets left = left (+) right. ----

/// Merges after leaf `count` was written to its slot; elements [lo, hi) of each slot row, rows
/// `stride` values apart. ORDER: merge(left, right), see the header comment.
template <class V, class Merge>
DT_HD void tree_push_with(V* slots, int64_t stride, int64_t lo, int64_t hi, int64_t count,
                          const Merge& merge) {
    int d = tree_leaf_slot(count);
    const int merges = trailing_ones64(static_cast<uint64_t>(count));
    for (int m = 0; m < merges; ++m, --d) {
        V* left = slots + (d - 1) * stride;
        const V* right = slots + d * stride;
        for (int64_t i = lo; i < hi; ++i) merge(left[i], right[i]);
    }
}

/// Folds the remaining slots after n >= 1 leaves; the total ends in slot 0.
template <class V, class Merge>
DT_HD void tree_finish_with(V* slots, int64_t stride, int64_t lo, int64_t hi, int64_t n,
                            const Merge& merge) {
    for (int d = popcount64(static_cast<uint64_t>(n)) - 1; d >= 1; --d) {
        V* left = slots + (d - 1) * stride;
        const V* right = slots + d * stride;
        for (int64_t i = lo; i < hi; ++i) merge(left[i], right[i]);
    }
}

/// A scalar stack: push a leaf n times, then finish. 66 slots: every n < 2^64.
template <class V, class Merge>
struct TreeStack {
    V slot[66];
    int64_t count;
};

template <class V, class Merge>
DT_HD void tree_stack_init(TreeStack<V, Merge>& t) {
    t.count = 0;
}

template <class V, class Merge>
DT_HD void tree_stack_push(TreeStack<V, Merge>& t, const V& leaf) {
    t.slot[tree_leaf_slot(t.count)] = leaf;
    tree_push_with(t.slot, 1, 0, 1, t.count, Merge{});
    ++t.count;
}

/// The total; `zero` for zero leaves.
template <class V, class Merge>
DT_HD V tree_stack_finish(TreeStack<V, Merge>& t, const V& zero) {
    if (t.count == 0) return zero;
    tree_finish_with(t.slot, 1, 0, 1, t.count, Merge{});
    return t.slot[0];
}

/// T of the n <= 8 values v[0..n) (`zero` for n == 0), v overwritten. ORDER: pairs, then pairs
/// of pairs, ... (the header's blocks, B = 2 at every level): merge(v[k], v[k + w]) for w = 1, 2,
/// 4 and k = 0, 2w, 4w, ... where k + w < n. The loops' trip counts are constants, so a device
/// thread keeps v in registers. For n == 8 it is the perfect tree
/// ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)).
template <class V, class Merge>
DT_HD V tree_of_at_most_8_with(V* v, int n, const V& zero, const Merge& merge) {
    for (int w = 1; w < 8; w *= 2)
        for (int k = 0; k + w < 8; k += 2 * w)
            if (k + w < n) merge(v[k], v[k + w]);
    return n > 0 ? v[0] : zero;
}

/// Pushes leaves 8m..8m+7 at once (t.count = 8m) as `block`, their perfect tree
/// (tree_of_at_most_8_with): the same merges on the same values as eight pushes. Why it is the
/// same: the counter writes leaf 8m to slot popcount(8m) and the block's own merges (pairs, then
/// fours, then the eight) leave its perfect tree there; the merges left are those of the block's
/// last leaf past its three low ones, trailing_ones(m). A device thread then keeps a block in
/// registers and touches the dynamically indexed (local-memory) slots once per 8 leaves.
template <class V, class Merge>
DT_HD void tree_stack_push_8(TreeStack<V, Merge>& t, const V& block) {
    int d = tree_leaf_slot(t.count);
    t.slot[d] = block;
    const int merges = trailing_ones64(static_cast<uint64_t>(t.count) >> 3);
    const Merge merge{};
    for (int m = 0; m < merges; ++m, --d) merge(t.slot[d - 1], t.slot[d]);
    t.count += 8;
}

/// T(leaf(0), ..., leaf(n - 1)), each leaf(i) evaluated once: blocks of 8 by tree_stack_push_8,
/// the rest one by one (`zero` for n == 0).
template <class V, class Merge, class Leaf>
DT_HD V tree_stack_sum_of(int64_t n, const Leaf& leaf, const V& zero) {
    TreeStack<V, Merge> t;
    tree_stack_init(t);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V v[8];
        for (int k = 0; k < 8; ++k) v[k] = leaf(i + k);
        tree_stack_push_8(t, tree_of_at_most_8_with(v, 8, zero, Merge{}));
    }
    for (; i < n; ++i) tree_stack_push(t, leaf(i));
    return tree_stack_finish(t, zero);
}

// ---- the `tree` mode: floats and + ----

DT_HD void tree_push(float* slots, int64_t stride, int64_t lo, int64_t hi, int64_t count) {
    tree_push_with(slots, stride, lo, hi, count, FloatPlus{});
}
DT_HD void tree_finish(float* slots, int64_t stride, int64_t lo, int64_t hi, int64_t n) {
    tree_finish_with(slots, stride, lo, hi, n, FloatPlus{});
}

/// Scalar tree stack: push(leaf) n times, then finish(). finish() of zero leaves is +0.
using TreeSum = TreeStack<float, FloatPlus>;
DT_HD void tree_sum_init(TreeSum& t) { tree_stack_init(t); }
DT_HD void tree_sum_push(TreeSum& t, float leaf) { tree_stack_push(t, leaf); }
DT_HD float tree_sum_finish(TreeSum& t) { return tree_stack_finish(t, 0.0f); }
DT_HD float tree_of_at_most_8(float* v, int n) {
    return tree_of_at_most_8_with(v, n, 0.0f, FloatPlus{});
}
DT_HD void tree_sum_push_8(TreeSum& t, float block) { tree_stack_push_8(t, block); }
template <class Leaf>
DT_HD float tree_sum_of(int64_t n, const Leaf& leaf) {
    return tree_stack_sum_of<float, FloatPlus>(n, leaf, 0.0f);
}

/// T(p[0..n)) with p[i] = partials[i * stride]; 0 for n == 0.
DT_HD float reduce_tree_combine(const float* partials, int64_t n, int64_t stride = 1) {
    return tree_sum_of(n, [&](int64_t i) { return partials[i * stride]; });
}

/// ORDER: sequential leaf sum x[0] + x[s] + x[2s] + ... from +0, left to right.
DT_HD float sum_sequential(const float* x, int64_t n, int64_t stride = 1) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) acc = acc + x[i * stride];
    return acc;
}

}  // namespace dt::kernels::common
