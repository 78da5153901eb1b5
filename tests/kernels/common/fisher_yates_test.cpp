// SPDX-License-Identifier: MIT
// Pins fisher_yates_shuffle (kernels/common/fisher_yates.h): identity first, then one swap per
// i = n-1 down to 1 with j = draw(i), the draw called exactly once per i in that order; equal to
// a hand-written evaluation for a scripted draw and for a Philox draw, for both index types.
#include "kernels/common/fisher_yates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/common/philox.h"
#include "tests/support/rng.h"

namespace dt::kernels::common {
namespace {

TEST(FisherYates, ScriptedDrawsGiveTheHandWrittenSwaps) {
    // draws j(4) = 1, j(3) = 3, j(2) = 0, j(1) = 0, evaluated by hand:
    //   [0 1 2 3 4] -swap(4,1)-> [0 4 2 3 1] -swap(3,3)-> [0 4 2 3 1] -swap(2,0)-> [2 4 0 3 1]
    //   -swap(1,0)-> [4 2 0 3 1]
    const uint64_t script[5] = {99, 0, 0, 3, 1};  // script[i] = j for step i (i = 0 never drawn)
    std::vector<int64_t> perm(5, -1);
    std::vector<int64_t> asked;
    fisher_yates_shuffle(perm.data(), 5, [&](int64_t i) {
        asked.push_back(i);
        return script[i];
    });
    EXPECT_EQ(perm, (std::vector<int64_t>{4, 2, 0, 3, 1}));
    EXPECT_EQ(asked, (std::vector<int64_t>{4, 3, 2, 1}));  // once per i, descending, never i = 0
}

TEST(FisherYates, SmallSizesNeedNoDraw) {
    int calls = 0;
    auto draw = [&](int64_t) {
        ++calls;
        return uint64_t{0};
    };
    uint32_t one[1] = {7};
    fisher_yates_shuffle(one, 0, draw);
    EXPECT_EQ(one[0], 7u);  // n = 0 writes nothing
    fisher_yates_shuffle(one, 1, draw);
    EXPECT_EQ(one[0], 0u);
    EXPECT_EQ(calls, 0);
}

TEST(FisherYates, DrawOfZeroRotatesAndDrawOfIIsIdentity) {
    std::vector<uint32_t> p(6);
    fisher_yates_shuffle(p.data(), 6, [](int64_t i) { return static_cast<uint64_t>(i); });
    EXPECT_EQ(p, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
    // j = 0 always: each step swaps the front into place i, a rotation by one.
    fisher_yates_shuffle(p.data(), 6, [](int64_t) { return uint64_t{0}; });
    EXPECT_EQ(p, (std::vector<uint32_t>{1, 2, 3, 4, 5, 0}));
}

TEST(FisherYates, EqualsHandWrittenLoopWithPhiloxDraws) {
    const uint64_t seed = test::test_seed();
    auto j_of = [&](int64_t i) {
        const Philox4 r = philox_draw(seed, RngStream::kTest, static_cast<uint64_t>(i), 3);
        return uniform_below(r.v[0], r.v[1], static_cast<uint64_t>(i) + 1);
    };
    for (int64_t n : {2, 3, 17, 256, 1001}) {
        std::vector<int64_t> want(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i) want[i] = i;
        for (int64_t i = n - 1; i >= 1; --i) std::swap(want[i], want[j_of(i)]);
        std::vector<int64_t> got(static_cast<std::size_t>(n));
        fisher_yates_shuffle(got.data(), n, j_of);
        EXPECT_EQ(got, want) << n;
        std::vector<uint32_t> got32(static_cast<std::size_t>(n));
        fisher_yates_shuffle(got32.data(), n, j_of);
        EXPECT_TRUE(std::equal(got32.begin(), got32.end(), want.begin())) << n;
    }
}

}  // namespace
}  // namespace dt::kernels::common
