// SPDX-License-Identifier: MIT
// The `permuted:<seed>` accumulation mode: the leaves (the same leaves as the `tree` mode, e.g.
// one per sample) are summed sequentially in a seeded pseudo-random order. Replayable
// "implementation noise": the order is a pure function of (seed, site, call), never of threads.
//
// Keys. The engine derives one key per kernel call:  key = permute_key(seed, site, call)
//   = the first two words of philox_draw(seed, kPermuteStream, index = call, sub = site),
// (Philox is a bijection of the counter for a fixed seed, so distinct (site, call) give distinct
// 128-bit words; a 64-bit key collision is a 2^-64 event). The kernel computes the order once per
// reduction with permute_order(order, n, key) and applies it to every output element.
// Order. fisher_yates_shuffle (fisher_yates.h) with the draw j = uniform_below(i + 1) from the
//   64-bit word pair (i & 1 ? (v2, v3) : (v0, v1)) of philox_draw(key, kPermuteStream,
//   index = i / 2, sub = kPermuteSubShuffle): one Philox block serves two steps.
//   (uniform_below's bias is below 2^-32 for n < 2^32; n must be < 2^32.)
// ORDER (the sum): acc = +0; acc = acc + leaf[order[0]]; acc = acc + leaf[order[1]]; ...
#pragma once
#include "kernels/common/fisher_yates.h"
#include "kernels/common/hd.h"
#include "kernels/common/philox.h"

namespace dt::kernels::common {

/// Philox stream of the permuted mode (philox.h).
constexpr RngStream kPermuteStream = RngStream::kPermute;
/// `sub` coordinate of the shuffle draws (the key derivation uses sub = site).
constexpr uint32_t kPermuteSubShuffle = 0xffffffffu;

/// The per-call key of reduction site `site` at its `call`-th invocation under run seed `seed`.
DT_HD uint64_t permute_key(uint64_t seed, uint32_t site, uint64_t call) {
    const Philox4 r = philox_draw(seed, kPermuteStream, call, site);
    return (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
}

/// order[0..n) = the permutation of 0..n-1 for key (see the header comment). n < 2^32.
DT_HD void permute_order(uint32_t* order, int64_t n, uint64_t key) {
    // The draw of the header comment; i descends, so each Philox block i / 2 is drawn once.
    Philox4 r{};
    uint64_t have = ~uint64_t{0};
    fisher_yates_shuffle(order, n, [&](int64_t i) {
        const uint64_t block = static_cast<uint64_t>(i) >> 1;
        if (block != have) {
            r = philox_draw(key, kPermuteStream, block, kPermuteSubShuffle);
            have = block;
        }
        const int w = (i & 1) ? 2 : 0;
        return uniform_below(r.v[w], r.v[w + 1], static_cast<uint64_t>(i) + 1u);
    });
}

/// ORDER: +0 + leaves[order[0] * stride] + leaves[order[1] * stride] + ..., left to right.
DT_HD float permuted_sum(const float* leaves, const uint32_t* order, int64_t n,
                         int64_t stride = 1) {
    float acc = 0.0f;
    for (int64_t k = 0; k < n; ++k) acc = acc + leaves[static_cast<int64_t>(order[k]) * stride];
    return acc;
}

/// Streaming form for kernels that produce leaves on demand: at step k (0-based) compute leaf
/// order[k] and call this; acc must start at +0. Per element equal to permuted_sum.
DT_HD void permuted_accumulate(float* acc, const float* leaf, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) acc[i] = acc[i] + leaf[i];
}

}  // namespace dt::kernels::common
