// SPDX-License-Identifier: MIT
// The `kahan` accumulation mode: Neumaier-compensated sums (Neumaier 1974, "improved Kahan")
// over the same leaves as the `tree` mode, combined by the same left-complete tree
// (reduce_tree.h) with kahan_merge instead of +, and rounded to one float by kahan_value at the
// very end. Deterministic: every operation below runs in the order written (-ffp-contract=off).
//
// A KahanSum is (sum, comp): sum is the running float sum, comp the running float sum of the
// exact rounding errors of the additions into sum. The value is sum + comp.
// ORDER (kahan_add(k, x)):
//   t = k.sum + x
//   err = two_sum_err(k.sum, x, t):  bp = t - k.sum;  ap = t - bp;  err = (k.sum - ap) + (x - bp)
//   k.comp = k.comp + err;  k.sum = t
// err is the exact rounding error of t (2Sum, Moller/Knuth; 6 flops, no branch). It is bit for
// bit the error of Neumaier's branch form  |s| >= |x| ? (s - t) + x : (x - t) + s  whenever t is
// finite (both are exact and neither yields -0; checked on 2e8 random pairs, and the tests compare
// with that form bitwise): the branch is gone, nothing else changes.
// ORDER (kahan_merge(a, b), a is the left operand of the tree):
//   t = a.sum + b.sum;  err = two_sum_err(a.sum, b.sum, t)
//   a.comp = (a.comp + b.comp) + err;  a.sum = t
// ORDER (kahan_value(k)): k.sum + k.comp, or k.sum alone when k.sum is inf or NaN (then comp may
//   hold NaN from inf - inf; returning sum keeps plain-sum semantics: inf stays inf, NaN NaN).
// A leaf is a KahanSum over a slice in index order from (+0, +0) (kahan_sum below).
#pragma once
#include "kernels/common/hd.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::common {

struct KahanSum {
    float sum;
    float comp;
};

/// The exact error of t = a + b (t finite). ORDER: bp = t - a; ap = t - bp; (a - ap) + (b - bp).
DT_HD float two_sum_err(float a, float b, float t) {
    const float bp = t - a;
    const float ap = t - bp;
    return (a - ap) + (b - bp);
}

DT_HD void kahan_init(KahanSum& k) {
    k.sum = 0.0f;
    k.comp = 0.0f;
}

DT_HD KahanSum kahan_zero() { return KahanSum{0.0f, 0.0f}; }

/// ORDER: see the header comment.
DT_HD void kahan_add(KahanSum& k, float x) {
    const float t = k.sum + x;
    k.comp = k.comp + two_sum_err(k.sum, x, t);
    k.sum = t;
}

/// a = a (+) b. ORDER: see the header comment; a is the left operand.
DT_HD void kahan_merge(KahanSum& a, const KahanSum& b) {
    const float t = a.sum + b.sum;
    a.comp = (a.comp + b.comp) + two_sum_err(a.sum, b.sum, t);
    a.sum = t;
}

/// ORDER: sum + comp; sum alone when sum is not finite.
DT_HD float kahan_value(const KahanSum& k) {
    const bool finite = (k.sum - k.sum) == 0.0f;
    return finite ? k.sum + k.comp : k.sum;
}

/// Leaf. ORDER: kahan_add of x[0], x[s], ..., x[(n-1)s] in index order, from (+0, +0).
DT_HD KahanSum kahan_sum(const float* x, int64_t n, int64_t stride = 1) {
    KahanSum k = kahan_zero();
    for (int64_t i = 0; i < n; ++i) kahan_add(k, x[i * stride]);
    return k;
}

// ---- the tree over compensated leaves: reduce_tree.h's stack with kahan_merge ----

/// The kahan tree's merge. ORDER: kahan_merge(left, right).
struct KahanMerge {
    DT_HD void operator()(KahanSum& left, const KahanSum& right) const { kahan_merge(left, right); }
};

/// tree_push with kahan_merge: rows of KahanSums `stride` apart.
DT_HD void kahan_tree_push(KahanSum* slots, int64_t stride, int64_t lo, int64_t hi,
                           int64_t count) {
    tree_push_with(slots, stride, lo, hi, count, KahanMerge{});
}
/// tree_finish with kahan_merge.
DT_HD void kahan_tree_finish(KahanSum* slots, int64_t stride, int64_t lo, int64_t hi,
                             int64_t n) {
    tree_finish_with(slots, stride, lo, hi, n, KahanMerge{});
}

/// Scalar stack: push(leaf) n times, then finish(). finish() of zero leaves is (+0, +0).
using KahanTreeSum = TreeStack<KahanSum, KahanMerge>;
DT_HD void kahan_tree_sum_init(KahanTreeSum& t) { tree_stack_init(t); }
DT_HD void kahan_tree_sum_push(KahanTreeSum& t, KahanSum leaf) { tree_stack_push(t, leaf); }
DT_HD KahanSum kahan_tree_sum_finish(KahanTreeSum& t) {
    return tree_stack_finish(t, kahan_zero());
}
/// T of the n <= 8 KahanSums v[0..n) with kahan_merge ((+0, +0) for n == 0), v overwritten.
DT_HD KahanSum kahan_tree_of_at_most_8(KahanSum* v, int n) {
    return tree_of_at_most_8_with(v, n, kahan_zero(), KahanMerge{});
}
/// Pushes leaves 8m..8m+7 at once (t.count = 8m) as their perfect tree, v[0..8) consumed.
/// ORDER: m(m(m(v0,v1), m(v2,v3)), m(m(v4,v5), m(v6,v7))), m = kahan_merge.
DT_HD void kahan_tree_sum_push_8(KahanTreeSum& t, KahanSum* v) {
    tree_stack_push_8(t, kahan_tree_of_at_most_8(v, 8));
}
/// T(leaf(0), ..., leaf(n - 1)) with kahan_merge, each leaf(i) (a KahanSum) evaluated once;
/// (+0, +0) for n == 0.
template <class Leaf>
DT_HD KahanSum kahan_tree_sum_of(int64_t n, const Leaf& leaf) {
    return tree_stack_sum_of<KahanSum, KahanMerge>(n, leaf, kahan_zero());
}

/// T(leaves[0..n)) with kahan_merge, leaves[i * stride]; (+0, +0) for n == 0.
DT_HD KahanSum kahan_tree_combine(const KahanSum* leaves, int64_t n, int64_t stride = 1) {
    return kahan_tree_sum_of(n, [&](int64_t i) { return leaves[i * stride]; });
}

/// The whole `kahan` recipe on one array. ORDER: leaves of `chunk` elements in index order (the
/// last one shorter), each a kahan_sum, combined by the left-complete tree with kahan_merge, then
/// kahan_value. +0 for n == 0.
DT_HD float kahan_sum_chunked(const float* x, int64_t n, int64_t chunk, int64_t stride = 1) {
    KahanTreeSum t;
    kahan_tree_sum_init(t);
    for (int64_t lo = 0; lo < n; lo += chunk) {
        const int64_t len = (n - lo < chunk) ? n - lo : chunk;
        kahan_tree_sum_push(t, kahan_sum(x + lo * stride, len, stride));
    }
    return kahan_value(kahan_tree_sum_finish(t));
}

// ---- vector helpers: one KahanSum per output element ----

DT_HD void kahan_init_row(KahanSum* k, int64_t n) {
    for (int64_t i = 0; i < n; ++i) kahan_init(k[i]);
}

/// k[i] (+)= x[i * stride] for i in [0, n) (kahan_add each).
DT_HD void kahan_add_row(KahanSum* k, const float* x, int64_t n, int64_t stride = 1) {
    for (int64_t i = 0; i < n; ++i) kahan_add(k[i], x[i * stride]);
}

/// out[i * stride] = kahan_value(k[i]) for i in [0, n).
DT_HD void kahan_value_row(const KahanSum* k, float* out, int64_t n, int64_t stride = 1) {
    for (int64_t i = 0; i < n; ++i) out[i * stride] = kahan_value(k[i]);
}

}  // namespace dt::kernels::common
