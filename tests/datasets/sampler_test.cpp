// SPDX-License-Identifier: MIT
// epoch_permutation and within_batch_permutation: permutations, pure functions of their
// arguments, different across epochs, batches and seeds, equal to a hand-written Fisher-Yates
// over the documented draws (and to pinned values), and unchanged when computed concurrently.
#include "datasets/sampler.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "kernels/common/philox.h"

namespace dt {
namespace {

bool is_permutation_of_iota(std::vector<int64_t> p) {
    std::sort(p.begin(), p.end());
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (p[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
}

TEST(Sampler, IdentityPermutation) {
    EXPECT_EQ(identity_permutation(4), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_TRUE(identity_permutation(0).empty());
    EXPECT_THROW(identity_permutation(-1), ValueError);
}

TEST(Sampler, SmallSizes) {
    EXPECT_TRUE(epoch_permutation(0, 1, 0).empty());
    EXPECT_EQ(epoch_permutation(1, 1, 0), (std::vector<int64_t>{0}));
}

TEST(Sampler, IsAPermutationForManySizes) {
    for (int64_t n : {2, 3, 7, 64, 1000, 60000}) {
        for (uint64_t epoch : {0u, 1u, 17u}) {
            EXPECT_TRUE(is_permutation_of_iota(epoch_permutation(n, 42, epoch))) << n;
        }
    }
}

TEST(Sampler, MatchesHandWrittenFisherYates) {
    using namespace kernels::common;
    const int64_t n = 257;
    const uint64_t seed = 0x1234567890ABCDEFull, epoch = 5;
    std::vector<int64_t> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = i;
    for (int64_t i = n - 1; i >= 1; --i) {
        Philox4 r = philox_draw(seed, RngStream::kShuffle, static_cast<uint64_t>(i),
                                static_cast<uint32_t>(epoch));
        uint64_t x = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
        auto j = static_cast<int64_t>((static_cast<unsigned __int128>(x) * (i + 1)) >> 64);
        ASSERT_LE(j, i);
        std::swap(want[i], want[j]);
    }
    EXPECT_EQ(epoch_permutation(n, seed, epoch), want);
}

TEST(Sampler, PinnedOrder) {
    // Golden, recorded before the loop moved to kernels/common/fisher_yates.h: changing the draw
    // changes every shuffled run.
    EXPECT_EQ(epoch_permutation(12, 42, 3),
              (std::vector<int64_t>{3, 2, 7, 8, 5, 0, 1, 11, 10, 6, 9, 4}));
}

TEST(Sampler, DeterministicAndVariesWithEpochAndSeed) {
    const auto a = epoch_permutation(1000, 7, 3);
    EXPECT_EQ(a, epoch_permutation(1000, 7, 3));
    EXPECT_NE(a, epoch_permutation(1000, 7, 4));
    EXPECT_NE(a, epoch_permutation(1000, 8, 3));
    EXPECT_NE(a, identity_permutation(1000));
}

TEST(Sampler, RoughlyUniformFirstElement) {
    // Over 4000 epochs each of 4 values should land first about 1000 times (sd ~27).
    std::vector<int> count(4, 0);
    for (uint64_t e = 0; e < 4000; ++e) ++count[epoch_permutation(4, 99, e)[0]];
    for (int c : count) EXPECT_NEAR(c, 1000, 150);
}

TEST(Sampler, IndependentOfThreadCount) {
    const auto want = epoch_permutation(5000, 11, 2);
    for (int threads : {1, 2, 3, 7, 16}) {
        std::vector<std::vector<int64_t>> got(static_cast<std::size_t>(threads));
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int t = 0; t < threads; ++t) got[t] = epoch_permutation(5000, 11, 2);
        for (const auto& g : got) EXPECT_EQ(g, want) << threads << " threads";
    }
}

TEST(Sampler, EpochBeyond32BitsIsRejected) {
    EXPECT_THROW(epoch_permutation(10, 1, uint64_t{1} << 32), ValueError);
}

// ---- within-batch order (--shuffle-within-batch) ----

TEST(WithinBatchOrder, PermutationKeyedBySeedEpochBatch) {
    const std::vector<int64_t> p = within_batch_permutation(32, 5, 1, 2);
    EXPECT_TRUE(is_permutation_of_iota(p));
    EXPECT_EQ(p, within_batch_permutation(32, 5, 1, 2));  // a pure function
    EXPECT_NE(p, within_batch_permutation(32, 6, 1, 2));
    EXPECT_NE(p, within_batch_permutation(32, 5, 0, 2));
    EXPECT_NE(p, within_batch_permutation(32, 5, 1, 3));
    EXPECT_NE(p, identity_permutation(32));
    EXPECT_TRUE(within_batch_permutation(0, 5, 0, 0).empty());
    EXPECT_EQ(within_batch_permutation(1, 5, 0, 0), std::vector<int64_t>{0});
}

TEST(WithinBatchOrder, MatchesHandWrittenFisherYates) {
    using namespace kernels::common;
    const uint64_t seed = 0xFEEDFACE12345678ull, epoch = 9;
    const int64_t batch = 31, n = 129;
    const Philox4 k = philox_draw(seed, RngStream::kWithinBatch, batch, epoch);
    const uint64_t key = (static_cast<uint64_t>(k.v[1]) << 32) | k.v[0];
    std::vector<int64_t> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = i;
    for (int64_t i = n - 1; i >= 1; --i) {
        Philox4 r = philox_draw(key, RngStream::kWithinBatch, static_cast<uint64_t>(i), 0);
        uint64_t x = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
        auto j = static_cast<int64_t>((static_cast<unsigned __int128>(x) * (i + 1)) >> 64);
        std::swap(want[i], want[j]);
    }
    EXPECT_EQ(within_batch_permutation(n, seed, epoch, batch), want);
}

TEST(WithinBatchOrder, PinnedOrder) {
    // Golden, recorded from the implementation in engine/noise before it moved here: changing
    // the key or the draw changes every --shuffle-within-batch run.
    EXPECT_EQ(within_batch_permutation(12, 42, 3, 7),
              (std::vector<int64_t>{6, 7, 3, 4, 5, 8, 11, 10, 1, 2, 0, 9}));
}

TEST(WithinBatchOrder, RejectsNegativeSizesAndWideEpochs) {
    EXPECT_THROW(within_batch_permutation(-1, 1, 0, 0), ValueError);
    EXPECT_THROW(within_batch_permutation(4, 1, 0, -1), ValueError);
    EXPECT_THROW(within_batch_permutation(4, 1, uint64_t{1} << 32, 0), ValueError);
}

}  // namespace
}  // namespace dt
