// SPDX-License-Identifier: MIT
// Contract of the embedding kernels: a gather of table rows by id, and its scatter-add backward.
// Shapes: ids (M) int64 in [0, V) (the caller checks), table and dtable (V, C), y and dy (M, C).
// The rows are B sequences of T positions: M = B * T, row m = b * T + t (tokens: ids = the
// tokens; learned positions: ids[m] = t).
// Numeric recipes:
// - forward: y[m, c] = table[ids[m], c], a copy (bitwise identical everywhere).
// - embed.grad (embedding_backward), by accumulation mode (p.accum). dtable[v, c] sums dy[m, c]
//   over every row m with ids[m] == v; the rows of a sequence b form its leaf:
//   leaf(v, b)[c] = +0 + dy[b*T + t1, c] + dy[b*T + t2, c] + ..., t1 < t2 < ... the positions
//   of sequence b whose id is v (a +0 leaf for a sequence without v).
//   tree      ORDER: leaf(v, b) in positions ascending, as above;
//             ORDER: dtable[v, c] = left-complete tree T (kernels/common/reduce_tree.h) of
//             leaf(v, 0), ..., leaf(v, B-1), sequence order, the +0 leaves included.
//   kahan     ORDER: leaf = kahan_add of the same terms, positions ascending, from (+0, +0);
//             ORDER: the same tree over the B leaves with kahan_merge (absent: (+0, +0)), then
//             kahan_value (kernels/common/accum_kahan.h).
//   exact     ORDER: none. dtable[v, c] = the exact sum of every dy[m, c] with ids[m] == v,
//             rounded once (kernels/common/accum_exact.h): permuting the sequences, the rows or
//             the threads changes no bit.
//   permuted  the tree mode's leaves; ORDER: dtable[v, c] = +0 + leaf(v, pi[0]) + leaf(v, pi[1])
//             + ... + leaf(v, pi[B-1]), pi = permute_order(B, accum.permute_key) (one order for
//             every row and column, kernels/common/accum_permuted.h).
//   atomic    no ORDER on purpose: the zeroed dtable receives each dy element by an atomic add
//             (kernels/common/atomic_add.h), in whatever order threads get there. The CPU gives
//             threads blocks of rows m (one thread: +0 + dy[m1] + dy[m2] + ..., m ascending);
//             the GPU a thread per element (m, c). Nondeterministic with 2+ threads.
//   Rows v that no id hits are +0 in every mode.
//   A part of a split batch (exact mode, p.exact_out set): each element's unrounded exact sum is
//   added to exact_out[v * C + c] instead (normalised first: one unit per element and call), and
//   dtable is not written. The parts' merged sums, rounded once, are the whole batch's bits.
// Absent leaves cost nothing. The tree, kahan and permuted modes skip every merge or add whose
// operand is an absent leaf (+0, or (+0, +0)): EmbedTree below. That is bitwise the recipe:
// x + (+0) = x for every x except -0, and no leaf or partial sum is -0, since each starts at +0
// and a sum is -0 only when both operands are. Kahan's sum keeps its bits the same way, and its
// compensation too while the sum is finite; kahan_value ignores the compensation otherwise.
// tests/kernels/cpu/embedding_test.cpp checks the skip against the dense tree on special values.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/hd.h"

namespace dt::kernels {

struct EmbeddingParams {
    int64_t V = 0, C = 0;  // table (V, C)
    int64_t M = 0, T = 1;  // ids (M), M = B * T: B sequences of T positions
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);  // embed.grad
    // embed.grad in the exact mode only: the caller's accumulators (layout of dtable,
    // initialised by the caller) that a part of a split batch adds its sums to; dtable is then
    // not written (engine/runtime/batch_split.h). On cuda, device memory.
    common::ExactAcc* exact_out = nullptr;
};

/// B, the sequences of the rows (0 without rows).
DT_HD int64_t embedding_sequences(const EmbeddingParams& p) { return p.T > 0 ? p.M / p.T : 0; }

// ---- the tree over the B sequence leaves of a row, absent leaves skipped ----

/// reduce_tree.h's binary-counter stack with a live bit per slot: a slot holding only +0 leaves
/// is dead, and a merge with a dead operand is left out (the left one dead: the right one is
/// moved). So every merge of two live partials is T's, in T's order (the header comment says why
/// the bits are T's). V: a float (the GPU's thread per element) or a row of them (the CPU's
/// column chunks); merge(left, right) sets left = left (+) right. 64 slots: count < 2^63.
template <class V>
struct EmbedTree {
    V slot[64];
    uint64_t live;  // bit d: slot d holds a live partial
    int64_t count;  // leaves pushed, absent ones included
};

template <class V>
DT_HD void embed_tree_init(EmbedTree<V>& t) {
    t.live = 0;
    t.count = 0;
}

/// ORDER: merge(slot[l], slot[r]) when both are live (see EmbedTree).
template <class V, class Merge>
DT_HD void embed_tree_merge(EmbedTree<V>& t, int l, int r, const Merge& merge) {
    const uint64_t lb = uint64_t{1} << l, rb = uint64_t{1} << r;
    if ((t.live & rb) == 0) return;
    if ((t.live & lb) != 0) {
        merge(t.slot[l], t.slot[r]);
    } else {
        t.slot[l] = t.slot[r];
        t.live |= lb;
    }
}

/// Pushes the next sequence's leaf: `leaf` when live, else an absent (+0) one.
template <class V, class Merge>
DT_HD void embed_tree_push_if(EmbedTree<V>& t, bool live, const V& leaf, const Merge& merge) {
    int d = common::popcount64(static_cast<uint64_t>(t.count));
    const uint64_t db = uint64_t{1} << d;
    if (live) {
        t.slot[d] = leaf;
        t.live |= db;
    } else {
        t.live &= ~db;
    }
    const int merges = common::trailing_ones64(static_cast<uint64_t>(t.count));
    for (int m = 0; m < merges; ++m, --d) embed_tree_merge(t, d - 1, d, merge);
    ++t.count;
}

/// Pushes the next sequence's leaf.
template <class V, class Merge>
DT_HD void embed_tree_push(EmbedTree<V>& t, const V& leaf, const Merge& merge) {
    embed_tree_push_if(t, true, leaf, merge);
}

/// Pushes the absent (+0) leaf of the next sequence.
template <class V, class Merge>
DT_HD void embed_tree_skip(EmbedTree<V>& t, const Merge& merge) {
    embed_tree_push_if(t, false, t.slot[0], merge);
}

/// The total after every leaf was pushed; `zero` when none was live.
template <class V, class Merge>
DT_HD V embed_tree_finish(EmbedTree<V>& t, const V& zero, const Merge& merge) {
    for (int d = common::popcount64(static_cast<uint64_t>(t.count)) - 1; d >= 1; --d)
        embed_tree_merge(t, d - 1, d, merge);
    return t.count > 0 && (t.live & 1u) != 0 ? t.slot[0] : zero;
}

namespace ref {
inline void embedding_forward(const int64_t* ids, const double* table, double* y,
                              const EmbeddingParams& p);
inline void embedding_backward(const int64_t* ids, const double* dy, double* dtable,
                               const EmbeddingParams& p);
}  // namespace ref

namespace cpu {
/// ids (M), table (V, C) -> y (M, C).
void embedding_forward(const int64_t* ids, const float* table, float* y, const EmbeddingParams& p);
/// embed.grad: ids (M), dy (M, C) -> dtable (V, C), overwritten.
void embedding_backward(const int64_t* ids, const float* dy, float* dtable,
                        const EmbeddingParams& p);
}  // namespace cpu

namespace cuda {  // kernels/cuda/embedding.cu (device pointers, the engine's stream)
void embedding_forward(const int64_t* ids, const float* table, float* y, const EmbeddingParams& p);
void embedding_backward(const int64_t* ids, const float* dy, float* dtable,
                        const EmbeddingParams& p);
}  // namespace cuda

}  // namespace dt::kernels
