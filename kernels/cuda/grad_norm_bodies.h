// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA global gradient norm (kernels/cuda/grad_norm.cu), host-device,
// on the recipe's pieces (kernels/grad_norm.h), so the bits are the CPU's by construction. Two
// launches: every leaf by a grid-stride loop (the tree and permuted leaves to memory, kahan's
// KahanSums to memory, atomic's raced into the total, exact's merged into one accumulator with
// integer atomics: any order, the same bits), then one thread combines the leaves in the mode's
// order. Clipping is a grid-stride loop per buffer. The CPU suite runs them over whole grids
// (tests/kernels/cuda/grad_norm_bodies_test.cpp).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/grad_norm.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// The buffers and where their leaves start (device memory): first[count] = leaves.
struct GradNormMap {
    const GradBuffer* buffers = nullptr;
    const int64_t* first = nullptr;
    int64_t count = 0, leaves = 0;
};

/// Where the first launch writes: one of them, by the mode.
struct GradNormLeaves {
    float* sums = nullptr;              // tree, permuted
    common::KahanSum* kahan = nullptr;  // kahan
    common::ExactAcc* exact = nullptr;  // exact: one accumulator, zeroed
    float* total = nullptr;             // atomic: zeroed
};

/// The buffer of leaf l: the last k with first[k] <= l (binary search).
DT_HD int64_t grad_norm_buffer_of(const GradNormMap& m, int64_t l) {
    int64_t lo = 0, hi = m.count;  // first[lo] <= l < first[hi]
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (m.first[mid] <= l)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

DT_HD void grad_norm_leaves_body(const GridPos& t, const GradNormMap& m, common::AccumMode mode,
                                 const GradNormLeaves& out) {
    common::ExactAcc mine;
    if (mode == common::AccumMode::kExact) common::exact_init(mine);
    common::grid_stride(t, m.leaves, [&](int64_t l) {
        const int64_t k = grad_norm_buffer_of(m, l), c = l - m.first[k];
        const GradBuffer b = m.buffers[k];
        switch (mode) {
            case common::AccumMode::kExact:
                common::exact_merge(mine, grad_norm_exact_leaf(b.g, b.n, c));
                common::exact_normalise(mine);
                break;
            case common::AccumMode::kKahan: {
                common::KahanSum s = common::kahan_zero();
                const int64_t lo = c * kGradNormChunk;
                const int64_t hi = lo + kGradNormChunk < b.n ? lo + kGradNormChunk : b.n;
                for (int64_t i = lo; i < hi; ++i) common::kahan_add(s, b.g[i] * b.g[i]);
                out.kahan[l] = s;
                break;
            }
            case common::AccumMode::kAtomic:
                common::atomic_add_float(out.total, grad_norm_leaf(b.g, b.n, c));
                break;
            default:  // tree, permuted
                out.sums[l] = grad_norm_leaf(b.g, b.n, c);
        }
    });
    if (mode == common::AccumMode::kExact) common::exact_atomic_merge(out.exact, mine);
}

/// One thread: the total from the leaves (order: permute_order(leaves, key), permuted only).
DT_HD void grad_norm_combine_body(const GradNormMap& m, common::AccumMode mode,
                                  const GradNormLeaves& in, const uint32_t* order, float* total) {
    switch (mode) {
        case common::AccumMode::kExact:
            *total = common::exact_value(*in.exact);
            return;
        case common::AccumMode::kKahan:
            *total = common::kahan_value(common::kahan_tree_combine(in.kahan, m.leaves));
            return;
        case common::AccumMode::kAtomic:
            *total = *in.total;
            return;
        case common::AccumMode::kPermuted:
            *total = common::permuted_sum(in.sums, order, m.leaves);
            return;
        case common::AccumMode::kTree:
            *total = common::reduce_tree_combine(in.sums, m.leaves);
    }
}

DT_HD void grad_clip_body(const GridPos& t, GradBuffer b, const float* total, float max_norm) {
    const float s = *total;
    common::grid_stride(t, b.n,
                        [&](int64_t i) { b.g[i] = grad_clip_element(b.g[i], s, max_norm); });
}

}  // namespace dt::kernels::cuda
