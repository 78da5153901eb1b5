// SPDX-License-Identifier: MIT
// The per-channel combine's block program (kernels/cuda/channel_combine_block.h) on the host with
// real barriers, against the thread-per-(sum, channel) body it replaces (channel_combine_body:
// reduce_tree_combine / kahan_tree_combine over the sample leaves), bitwise, in the tree and
// kahan modes: sample counts around every power of two up to the program's 32 parts, parts of
// more than 8 leaves (N > 256: tree_sum_of), channel counts below, at and past a block's 8, both
// sums, and grids smaller than the blocks. The leaves span 40 binades, so that another tree
// (an operand order, a part boundary) gives other bits.
#include "kernels/cuda/channel_combine_block.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::GridPos;
using common::KahanSum;

/// Leaves of S sums of N x C rows: signed, magnitudes 2^-20 .. 2^20.
std::vector<float> spread_leaves(int64_t n, uint32_t tag) {
    std::vector<float> u = test::uniform_floats(2 * n, -1.0f, 1.0f, test::test_seed(), tag);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[i] = std::ldexp(u[2 * i], static_cast<int>(20 * u[2 * i + 1]));
    return v;
}

struct Totals {
    std::vector<float> block, thread;
};

/// The totals of q's leaves by the block program on `grid` blocks and by the per-thread body.
Totals both_ways(int S, const cuda::ChannelTotals& q, uint32_t grid) {
    const int64_t rows = q.N * q.C;
    const std::vector<float> leaves = spread_leaves(S * rows, 7);
    const std::vector<float> comps = spread_leaves(S * rows, 8);
    std::vector<KahanSum> kleaves(leaves.size());
    for (std::size_t i = 0; i < leaves.size(); ++i)
        kleaves[i] = KahanSum{leaves[i], std::ldexp(comps[i], -30)};
    Totals t{std::vector<float>(static_cast<std::size_t>(S * q.C), NAN),
             std::vector<float>(static_cast<std::size_t>(S * q.C), NAN)};
    cuda::ChannelSums block, thread;
    for (int s = 0; s < S; ++s) {
        block.sum[s] = t.block.data() + s * q.C;
        thread.sum[s] = t.thread.data() + s * q.C;
    }
    test::run_blocks(grid, cuda::kCombineThreads, cuda::kCombineSharedFloats,
                     [&](const GridPos& g, float* shared, const test::HostSync& sync) {
                         cuda::channel_combine_block(g, shared, sync, S, q, leaves.data(),
                                                     kleaves.data(), block);
                     });
    common::for_each_thread(1, 64, [&](const GridPos& g) {
        cuda::channel_combine_body(g, S, q, leaves.data(), kleaves.data(), nullptr, thread);
    });
    return t;
}

TEST(CudaChannelCombineBlock, EqualsTheThreadPerChannelTree) {
    for (const common::AccumMode mode : {common::AccumMode::kTree, common::AccumMode::kKahan}) {
        for (const int64_t n :
             {1, 2, 3, 5, 8, 9, 31, 32, 33, 63, 64, 65, 100, 128, 255, 256, 257, 300, 1000}) {
            for (const int64_t c : {1, 9, 20}) {
                const cuda::ChannelTotals q{n, c, 1, common::accum_spec(mode)};
                const Totals t = both_ways(2, q, cuda::combine_grid(2, q));
                EXPECT_TRUE(test::bitwise_equal(t.block.data(), t.thread.data(), 2 * c))
                    << common::accum_mode_name(mode) << " N=" << n << " C=" << c;
            }
        }
    }
}

TEST(CudaChannelCombineBlock, StridesOverItsBlocks) {
    // 2 sums x 40 channels are 10 blocks of 8 channels; grids of 1 and 3 blocks cover them.
    for (const uint32_t grid : {1u, 3u}) {
        const cuda::ChannelTotals q{45, 40, 1, common::accum_spec(common::AccumMode::kTree)};
        ASSERT_EQ(cuda::combine_blocks(2, q), 10);
        const Totals t = both_ways(2, q, grid);
        EXPECT_TRUE(test::bitwise_equal(t.block.data(), t.thread.data(), 80)) << grid;
    }
}

TEST(CudaChannelCombineBlock, PartsArePowersOfTwoOfAtMost32PerChannel) {
    EXPECT_EQ(cuda::combine_part_leaves(1), 1);
    EXPECT_EQ(cuda::combine_part_leaves(32), 1);
    EXPECT_EQ(cuda::combine_part_leaves(33), 2);
    EXPECT_EQ(cuda::combine_part_leaves(128), 4);
    EXPECT_EQ(cuda::combine_part_leaves(257), 16);
    for (int64_t n = 1; n < 5000; n += 7) {
        const int64_t b = cuda::combine_part_leaves(n);
        EXPECT_EQ(b & (b - 1), 0) << n;
        EXPECT_LE((n + b - 1) / b, cuda::kCombineParts) << n;
        EXPECT_TRUE(b == 1 || (n + b / 2 - 1) / (b / 2) > cuda::kCombineParts) << n;
    }
}

TEST(CudaChannelCombineBlock, OnlyTheTreeModesCombineInBlocks) {
    for (const common::AccumSpec& spec : {common::accum_spec(common::AccumMode::kTree),
                                          common::accum_spec(common::AccumMode::kKahan),
                                          common::accum_spec(common::AccumMode::kExact),
                                          common::accum_spec(common::AccumMode::kAtomic),
                                          common::accum_spec(common::AccumMode::kPermuted, 3)}) {
        const cuda::ChannelTotals q{4, 4, 4, spec};
        EXPECT_EQ(cuda::channel_combine_in_blocks(q),
                  spec.mode == common::AccumMode::kTree || spec.mode == common::AccumMode::kKahan);
    }
}

}  // namespace
}  // namespace dt::kernels
