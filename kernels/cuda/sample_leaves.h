// SPDX-License-Identifier: MIT
// The combination of per-sample leaves of one output element, as the contracts of linear.wgrad
// and conv.wgrad define it per mode (kernels/linear.h, kernels/conv2d.h), for the thread that
// owns the element: tree: the left-complete tree of leaf(0), ..., leaf(n-1); kahan: that tree
// over (leaf, +0) with kahan_merge, then kahan_value; exact: the leaves' exact sum rounded once;
// permuted: +0 + leaf(order[0]) + leaf(order[1]) + .... Leaves are computed on demand, once each
// (exact: twice where the double sum of accum_exact_short.h would not be exact).
// The order of a permuted mode is drawn once per call, by one thread (permute_order_body;
// launcher: permutation_on_device, kernels/cuda/launch.cuh).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cuda {

template <class Leaf>
DT_HD float combine_sample_leaves(const Leaf& leaf, int64_t n, common::AccumMode mode,
                                  const uint32_t* order) {
    switch (mode) {
        case common::AccumMode::kKahan:  // ORDER: the tree over (leaf, +0), kahan_merge
            if (n == 0) return 0.0f;
            return common::kahan_value(common::kahan_tree_sum_of(n, [&](int64_t s) {
                return common::KahanSum{leaf(s), 0.0f};
            }));
        case common::AccumMode::kExact:  // ORDER: none, rounded once (accum_exact_short.h)
            return common::exact_sum_of([&](auto&& add) {
                for (int64_t s = 0; s < n; ++s) add(leaf(s));
            });
        case common::AccumMode::kPermuted: {  // ORDER: +0 + leaf(order[0]) + leaf(order[1]) ...
            float acc = 0.0f;
            for (int64_t k = 0; k < n; ++k) acc = acc + leaf(order[k]);
            return acc;
        }
        default:  // ORDER: the left-complete tree in index order
            return common::tree_sum_of(n, leaf);
    }
}

/// The exact mode for a part of a split batch (the kernels' exact_out,
/// engine/runtime/batch_split.h): the leaves' exact sum ADDED to `out`, unrounded (1 unit: the
/// part's accumulator is normalised first). ORDER: none (integer sums; the leaves go in through
/// exact double segments, exact_stream_add).
template <class Leaf>
DT_HD void add_sample_leaves_exact(const Leaf& leaf, int64_t n, common::ExactAcc& out) {
    common::ExactAcc a;
    common::ExactShort seg;
    common::exact_init(a);
    common::exact_short_init(seg);
    for (int64_t s = 0; s < n; ++s) common::exact_stream_add(a, seg, leaf(s));
    common::exact_stream_flush(a, seg);
    common::exact_normalise(a);
    common::exact_merge(out, a);
}

/// Global thread 0: order[0..n) = permute_order(n, key).
DT_HD void permute_order_body(const common::GridPos& t, uint32_t* order, int64_t n, uint64_t key) {
    if (t.global() == 0) common::permute_order(order, n, key);
}

}  // namespace dt::kernels::cuda
