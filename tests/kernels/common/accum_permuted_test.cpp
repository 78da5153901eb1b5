// SPDX-License-Identifier: MIT
// Pins the `permuted` mode (kernels/common/accum_permuted.h): the order is a permutation, a pure
// function of (seed, site, call), changes with each of them, is spread over all orders, and the
// sum runs sequentially in that order (scalar, slice and streaming forms agree bitwise).
#include "kernels/common/accum_permuted.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels::common {
namespace {

using test::bits;

std::vector<uint32_t> order_of(int64_t n, uint64_t key) {
    std::vector<uint32_t> o(static_cast<std::size_t>(n));
    permute_order(o.data(), n, key);
    return o;
}

TEST(AccumPermuted, IsAPermutation) {
    for (int64_t n : {0, 1, 2, 3, 5, 64, 127, 128, 129, 1000, 100003}) {
        std::vector<uint32_t> o = order_of(n, permute_key(test::test_seed(), 3, 17));
        std::vector<uint32_t> sorted = o;
        std::sort(sorted.begin(), sorted.end());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], static_cast<uint32_t>(i)) << n;
    }
}

TEST(AccumPermuted, SameKeySameOrderDifferentKeysDifferentOrders) {
    const uint64_t seed = test::test_seed();
    EXPECT_EQ(order_of(1000, permute_key(seed, 2, 5)), order_of(1000, permute_key(seed, 2, 5)));
    std::set<std::vector<uint32_t>> seen;
    for (uint64_t s = 0; s < 8; ++s) seen.insert(order_of(64, permute_key(seed + s, 2, 5)));
    for (uint32_t site = 0; site < 8; ++site) seen.insert(order_of(64, permute_key(seed, site, 5)));
    for (uint64_t call = 0; call < 8; ++call) seen.insert(order_of(64, permute_key(seed, 2, call)));
    EXPECT_EQ(seen.size(), 22u);  // 24 draws, (seed, 2, 5) appears three times
    std::vector<uint32_t> identity(64);
    std::iota(identity.begin(), identity.end(), 0u);
    EXPECT_EQ(seen.count(identity), 0u);
    // Keys of distinct (site, call) pairs differ.
    std::set<uint64_t> keys;
    for (uint32_t site = 0; site < 16; ++site)
        for (uint64_t call = 0; call < 256; ++call) keys.insert(permute_key(seed, site, call));
    EXPECT_EQ(keys.size(), 16u * 256u);
}

TEST(AccumPermuted, PinnedOrder) {
    // Golden: changing the key derivation or the shuffle changes every `permuted` run.
    const std::vector<uint32_t> o = order_of(10, permute_key(42, 1, 0));
    const std::vector<uint32_t> want = {3, 2, 0, 8, 6, 1, 9, 5, 4, 7};
    EXPECT_EQ(o, want);
}

TEST(AccumPermuted, FollowsTheDocumentedConstruction) {
    // The header's recipe written out again: key from (seed, site, call), then Fisher-Yates from
    // the back with one 64-bit word pair per step (pair i & 1 of draw i / 2).
    const uint64_t seed = test::test_seed();
    const Philox4 k = philox_draw(seed, static_cast<RngStream>(5), /*index=*/11, /*sub=*/6);
    const uint64_t key = (uint64_t{k.v[1]} << 32) | k.v[0];
    ASSERT_EQ(permute_key(seed, 6, 11), key);
    const int64_t n = 301;
    std::vector<uint32_t> want(n);
    std::iota(want.begin(), want.end(), 0u);
    for (int64_t i = n - 1; i >= 1; --i) {
        Philox4 r = philox_draw(key, static_cast<RngStream>(5), static_cast<uint64_t>(i) / 2,
                                0xffffffffu);
        uint64_t word = i % 2 ? (uint64_t{r.v[3]} << 32 | r.v[2]) : (uint64_t{r.v[1]} << 32 | r.v[0]);
        uint64_t j = static_cast<uint64_t>((static_cast<unsigned __int128>(word) * (i + 1)) >> 64);
        std::swap(want[i], want[j]);
    }
    EXPECT_EQ(order_of(n, key), want);
}

TEST(AccumPermuted, AllOrdersOfThreeAppearEvenly) {
    std::map<std::vector<uint32_t>, int> count;
    const int draws = 60000;
    for (int c = 0; c < draws; ++c) count[order_of(3, permute_key(test::test_seed(), 0, c))]++;
    ASSERT_EQ(count.size(), 6u);
    for (const auto& [o, k] : count) EXPECT_NEAR(k, draws / 6, 500) << o[0] << o[1] << o[2];
    // And each position of a longer order is uniform-ish over the leaves.
    std::vector<int> first(16, 0);
    for (int c = 0; c < 16000; ++c) first[order_of(16, permute_key(7, 0, c))[0]]++;
    for (int v : first) EXPECT_NEAR(v, 1000, 150);
}

TEST(AccumPermuted, SumRunsSequentiallyInTheOrder) {
    const int64_t n = 9;
    std::vector<float> p = {1e8f, 3.0f, -1e8f, 5.0f, 7.5f, 1e-3f, 2.5e7f, -4.0f, 0.5f};
    std::vector<uint32_t> o = order_of(n, permute_key(1, 2, 3));
    float want = 0.0f;
    for (int64_t k = 0; k < n; ++k) want = want + p[o[k]];
    EXPECT_EQ(bits(permuted_sum(p.data(), o.data(), n)), bits(want));
    EXPECT_EQ(bits(permuted_sum(p.data(), o.data(), 0)), 0u);
    // Different orders give different float sums on these values (that is the point of the mode).
    std::set<uint32_t> sums;
    for (uint64_t call = 0; call < 50; ++call) {
        std::vector<uint32_t> oc = order_of(n, permute_key(1, 2, call));
        sums.insert(bits(permuted_sum(p.data(), oc.data(), n)));
    }
    EXPECT_GT(sums.size(), 3u);
}

TEST(AccumPermuted, StreamingFormEqualsScalar) {
    const int64_t n = 37, len = 6;
    std::vector<float> leaves = test::uniform_floats(n * len, -1e4f, 1e4f, test::test_seed(), 2);
    for (auto& v : leaves) v = v * v * v;
    std::vector<uint32_t> o = order_of(n, permute_key(9, 4, 1));
    std::vector<float> stream(len, 0.0f);
    for (int64_t k = 0; k < n; ++k) {
        permuted_accumulate(stream.data(), leaves.data() + o[k] * len, 0, len);
    }
    for (int64_t i = 0; i < len; ++i) {
        const float want = permuted_sum(leaves.data() + i, o.data(), n, len);
        EXPECT_EQ(bits(stream[i]), bits(want)) << i;
    }
}

}  // namespace
}  // namespace dt::kernels::common
