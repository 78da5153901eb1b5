// SPDX-License-Identifier: MIT
// Epoch order of a data set: a permutation that is a pure function of (n, seed, epoch), so a run
// can be resumed at any epoch and replayed on any machine or thread count. It is
// kernels::common::fisher_yates_shuffle (the recipe and its ORDER comment are there) with the
// draw j in [0, i] for step i:
//   r = philox_draw(seed, RngStream::kShuffle, index = i, sub = epoch)
//   j = uniform_below(r.v[0], r.v[1], i + 1)        // 64-bit multiply-high
// Only r.v[0], r.v[1] are used. Epochs are limited to [0, 2^32) because Philox's `sub` word is
// 32 bits wide.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/core/error.h"
#include "kernels/common/fisher_yates.h"
#include "kernels/common/philox.h"

namespace dt {

/// [0, 1, ..., n-1]: the order used when shuffling is off (and for evaluation).
inline std::vector<int64_t> identity_permutation(int64_t n) {
    DT_CHECK_VALUE(n >= 0, "identity_permutation: negative size ", n);
    std::vector<int64_t> perm(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
    return perm;
}

/// The shuffled order of epoch `epoch` (draw in the file header).
inline std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, uint64_t epoch) {
    using kernels::common::philox_draw;
    using kernels::common::RngStream;
    using kernels::common::uniform_below;
    DT_CHECK_VALUE(n >= 0, "epoch_permutation: negative size ", n);
    DT_CHECK_VALUE(epoch <= 0xFFFFFFFFull, "epoch_permutation: epoch ", epoch,
                   " does not fit the 32-bit Philox sub-counter (expected < 2^32)");
    std::vector<int64_t> perm(static_cast<std::size_t>(n));
    kernels::common::fisher_yates_shuffle(perm.data(), n, [&](int64_t i) {
        const auto r = philox_draw(seed, RngStream::kShuffle, static_cast<uint64_t>(i),
                                   static_cast<uint32_t>(epoch));
        return uniform_below(r.v[0], r.v[1], static_cast<uint64_t>(i + 1));
    });
    return perm;
}

}  // namespace dt
