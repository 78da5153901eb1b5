// SPDX-License-Identifier: MIT
// Pins the tree recipe of kernels/common/reduce_tree.h: its shape for small n written out by hand,
// its recursive definition for every n up to 300, the slice/stack form used by kernels and the
// blocks of eight that device threads keep in registers, a few leaves in pairs of pairs and
// the blocks of any power of two.
#include "kernels/common/reduce_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/rng.h"
#include "tests/support/tree_slices.h"

namespace dt::kernels::common {
namespace {

// The definition, written recursively.
float tree_recursive(const float* p, int64_t n) {
    if (n == 1) return p[0];
    int64_t s = 1;
    while (s * 2 < n) s *= 2;
    return tree_recursive(p, s) + tree_recursive(p + s, n - s);
}

TEST(ReduceTree, SmallShapesByHand) {
    // Values chosen so that different association orders give different float results.
    std::vector<float> p = {1e8f, 3.0f, -1e8f, 5.0f, 7.5f, 1e-3f, 2.5e7f};
    const float* q = p.data();
    EXPECT_EQ(test::bits(reduce_tree_combine(q, 1)), test::bits(q[0]));
    EXPECT_EQ(test::bits(reduce_tree_combine(q, 2)), test::bits(q[0] + q[1]));
    EXPECT_EQ(test::bits(reduce_tree_combine(q, 3)), test::bits((q[0] + q[1]) + q[2]));
    EXPECT_EQ(test::bits(reduce_tree_combine(q, 4)), test::bits((q[0] + q[1]) + (q[2] + q[3])));
    EXPECT_EQ(test::bits(reduce_tree_combine(q, 5)),
              test::bits(((q[0] + q[1]) + (q[2] + q[3])) + q[4]));
    EXPECT_EQ(test::bits(reduce_tree_combine(q, 7)),
              test::bits(((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + q[6])));
    EXPECT_EQ(reduce_tree_combine(q, 0), 0.0f);
}

TEST(ReduceTree, MatchesRecursiveDefinition) {
    std::vector<float> p = test::uniform_floats(300, -1e4f, 1e4f, test::test_seed());
    for (auto& v : p) v = v * v * v;  // wide magnitudes make rounding order-sensitive
    for (int64_t n = 1; n <= 300; ++n) {
        ASSERT_EQ(test::bits(reduce_tree_combine(p.data(), n)),
                  test::bits(tree_recursive(p.data(), n)))
            << "n = " << n;
    }
}

TEST(ReduceTree, SliceStackEqualsScalarTree) {
    const int64_t n = 37, len = 5;
    std::vector<float> leaves = test::uniform_floats(n * len, -3.0f, 3.0f, test::test_seed(), 1);
    // Two slices processed separately must give the same as one pass per element.
    const std::vector<float> slots = test::slice_stack(leaves, n, len, tree_push, tree_finish);
    for (int64_t i = 0; i < len; ++i) {
        EXPECT_EQ(test::bits(slots[i]), test::bits(reduce_tree_combine(leaves.data() + i, n, len)));
    }
}

TEST(ReduceTree, BlocksOfEightAreEightPushes) {
    // tree_sum_push_8 of a block's perfect tree leaves the stack exactly as eight single pushes
    // do (the live slots, bit for bit, and the count), after every block up to 40 of them;
    // tree_sum_of (blocks, then the rest) is the one-by-one tree for every n up to 330.
    std::vector<float> p = test::uniform_floats(330, -1e4f, 1e4f, test::test_seed(), 2);
    for (auto& v : p) v = v * v * v;
    TreeSum one, eight;
    tree_sum_init(one);
    tree_sum_init(eight);
    for (int64_t b = 0; b < 40; ++b) {
        for (int k = 0; k < 8; ++k) tree_sum_push(one, p[b * 8 + k]);
        float block[8];
        std::copy(p.begin() + b * 8, p.begin() + b * 8 + 8, block);
        tree_sum_push_8(eight, tree_of_at_most_8(block, 8));
        ASSERT_EQ(one.count, eight.count);
        for (int d = 0; d < popcount64(static_cast<uint64_t>(one.count)); ++d)
            ASSERT_EQ(test::bits(one.slot[d]), test::bits(eight.slot[d])) << b << " " << d;
    }
    for (int64_t n = 0; n <= 330; ++n) {
        TreeSum t;
        tree_sum_init(t);
        for (int64_t i = 0; i < n; ++i) tree_sum_push(t, p[i]);
        const float by_blocks = tree_sum_of(n, [&](int64_t i) { return p[i]; });
        ASSERT_EQ(test::bits(by_blocks), test::bits(tree_sum_finish(t))) << "n = " << n;
    }
}

TEST(ReduceTree, AFewLeavesInPairsOfPairsAreTheTree) {
    // tree_of_at_most_8 is T for every n <= 8; and the header's blocks: T of the blocks' trees is
    // T of the leaves for every power of two B and every n up to 300.
    std::vector<float> p = test::uniform_floats(300, -1e4f, 1e4f, test::test_seed(), 3);
    for (auto& v : p) v = v * v * v;
    for (int n = 0; n <= 8; ++n) {
        std::vector<float> v(p.begin(), p.begin() + 8);
        ASSERT_EQ(test::bits(tree_of_at_most_8(v.data(), n)),
                  test::bits(reduce_tree_combine(p.data(), n)))
            << "n = " << n;
    }
    for (int64_t b = 1; b <= 256; b *= 2) {
        for (int64_t n = 1; n <= 300; ++n) {
            std::vector<float> blocks;
            for (int64_t lo = 0; lo < n; lo += b)
                blocks.push_back(reduce_tree_combine(p.data() + lo, n - lo < b ? n - lo : b));
            ASSERT_EQ(test::bits(reduce_tree_combine(blocks.data(), int64_t(blocks.size()))),
                      test::bits(reduce_tree_combine(p.data(), n)))
                << "B = " << b << ", n = " << n;
        }
    }
}

TEST(ReduceTree, SlotsSuffice) {
    for (int64_t n : {1, 2, 3, 7, 8, 9, 127, 128, 129, 100000}) {
        int max_slot = 0;
        for (int64_t c = 0; c < n; ++c) max_slot = std::max(max_slot, tree_leaf_slot(c));
        EXPECT_LT(max_slot, tree_slots(n)) << "n = " << n;
    }
}

}  // namespace
}  // namespace dt::kernels::common
