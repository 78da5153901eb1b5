// SPDX-License-Identifier: MIT
// The one Fisher-Yates shuffle of detrain (Durstenfeld's in-place form, from the back). Every
// seeded order is built by it and differs only in its draw, the source of j for a given i:
//   epoch order          datasets/sampler.h  epoch_permutation
//   within-batch order   datasets/sampler.h  within_batch_permutation
//   `permuted` mode      kernels/common/accum_permuted.h  permute_order
// Host and device (DT_HD), POD only: the draw is any callable `uint64_t draw(int64_t i)`,
// returning j in [0, i]; it may keep state (e.g. one Philox block per two steps), since it is
// called exactly once per i, in the order below. Pinned by tests/kernels/common/fisher_yates_test.
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// perm[0..n) = a permutation of 0..n-1 chosen by `draw` (recipe in the ORDER comment).
/// `Index` is the element type (int64_t on the host, uint32_t in kernels); n must fit it.
// ORDER: perm = [0, 1, ..., n-1]; for i = n-1 down to 1: j = draw(i); swap(perm[i], perm[j]).
//        i descends and draw(i) is called once per i in that order, so perm is a function of
//        the draws alone (sequential by definition; nothing here depends on threads).
template <typename Index, typename Draw>
DT_HD void fisher_yates_shuffle(Index* perm, int64_t n, Draw&& draw) {
    for (int64_t i = 0; i < n; ++i) perm[i] = static_cast<Index>(i);
    for (int64_t i = n - 1; i >= 1; --i) {
        const auto j = static_cast<int64_t>(draw(i));
        const Index tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

}  // namespace dt::kernels::common
