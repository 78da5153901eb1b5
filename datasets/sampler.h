// SPDX-License-Identifier: MIT
// Sample orders: the epoch order of a data set and the order of the rows inside one batch
// (--shuffle-within-batch). Each is a pure function of its arguments, so a run can be resumed at
// any epoch and batch and replayed on any machine or thread count. Both are
// kernels::common::fisher_yates_shuffle (the recipe and its ORDER comment are there) and differ
// only in the draw, j in [0, i] for step i:
//   epoch order   r = philox_draw(seed, RngStream::kShuffle, index = i, sub = epoch)
//                 j = uniform_below(r.v[0], r.v[1], i + 1)        // 64-bit multiply-high
//   within batch  key = words 0,1 of philox_draw(seed, RngStream::kWithinBatch, index = batch,
//                       sub = epoch)                               // one key per (epoch, batch)
//                 r = philox_draw(key, RngStream::kWithinBatch, index = i, sub = 0)
//                 j = uniform_below(r.v[0], r.v[1], i + 1)
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

/// The order of the n rows of batch `batch` of epoch `epoch` under --shuffle-within-batch seed
/// `seed` (draw in the file header). Row r of the shuffled batch is row perm[r] of the loader's
/// batch (permute_rows, loader.h): the batch keeps its samples, only their order changes.
inline std::vector<int64_t> within_batch_permutation(int64_t n, uint64_t seed, uint64_t epoch,
                                                     int64_t batch) {
    using kernels::common::philox_draw;
    using kernels::common::RngStream;
    using kernels::common::uniform_below;
    DT_CHECK_VALUE(n >= 0 && batch >= 0 && epoch <= 0xFFFFFFFFull,
                   "within_batch_permutation: n ", n, ", batch ", batch, ", epoch ", epoch,
                   " (expected n, batch >= 0 and epoch < 2^32)");
    const auto k = philox_draw(seed, RngStream::kWithinBatch, static_cast<uint64_t>(batch),
                               static_cast<uint32_t>(epoch));
    const uint64_t key = (static_cast<uint64_t>(k.v[1]) << 32) | k.v[0];
    std::vector<int64_t> perm(static_cast<std::size_t>(n));
    kernels::common::fisher_yates_shuffle(perm.data(), n, [&](int64_t i) {
        const auto r = philox_draw(key, RngStream::kWithinBatch, static_cast<uint64_t>(i), 0);
        return uniform_below(r.v[0], r.v[1], static_cast<uint64_t>(i + 1));
    });
    return perm;
}

}  // namespace dt
