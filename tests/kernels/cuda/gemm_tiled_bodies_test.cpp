// SPDX-License-Identifier: MIT
// The tiled CUDA GEMM's block program (kernels/cuda/gemm_tiled_bodies.h over tile_gemm.h) run on
// the host with every thread of a block as its own thread and real barriers
// (tests/support/block_runner.h), against the CPU GEMM, bitwise: every transpose and accumulate
// combination, partial tiles in every dimension, K shorter than a tile and K = 0.
#include "kernels/cuda/gemm_tiled_bodies.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/launch_shape.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

TEST(CudaGemmTiledBlocks, EqualTheCpuGemmInEveryLayout) {
    struct Size {
        int64_t m, n, k;
    };
    // Partial tiles (32 x 64, 64 x 128, 16 x 16) and K chunks (8) everywhere, several tiles in both
    // dimensions.
    for (const Size s :
         {Size{37, 21, 45}, Size{16, 16, 16}, Size{5, 40, 3}, Size{18, 2, 0}, Size{70, 130, 19}}) {
        const std::vector<float> a = test::uniform_floats(s.m * s.k, -1, 1, test::test_seed(), 1),
                                 b = test::uniform_floats(s.k * s.n, -1, 1, test::test_seed(), 2),
                                 c0 = test::uniform_floats(s.m * s.n, -1, 1, test::test_seed(), 3);
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (bool acc : {false, true}) {
                    const GemmParams p{.m = s.m,
                                       .n = s.n,
                                       .k = s.k,
                                       .trans_a = ta,
                                       .trans_b = tb,
                                       .accumulate = acc};
                    std::vector<float> want = c0;
                    cpu::gemm(a.data(), b.data(), want.data(), p);
                    auto tiled = [&](auto shape) {
                        using S = decltype(shape);
                        std::vector<float> got = c0;
                        test::run_blocks(
                            static_cast<uint32_t>(cuda::gemm_tiles<S>(p)), S::kThreads, S::kShared,
                            [&](const common::GridPos& t, float* shared, const auto& sync) {
                                cuda::gemm_tiled_block<S>(t, shared, sync, a.data(), b.data(),
                                                          got.data(), p);
                            });
                        return got;
                    };
                    EXPECT_TRUE(test::bitwise_equal(tiled(cuda::SmallTile{}), want))
                        << s.m << "x" << s.n << "x" << s.k << " " << ta << tb << acc;
                    EXPECT_TRUE(test::bitwise_equal(tiled(cuda::LargeTile{}), want))
                        << "large " << s.m << "x" << s.n << "x" << s.k << " " << ta << tb << acc;
                    EXPECT_TRUE(test::bitwise_equal(tiled(cuda::TinyTile{}), want))
                        << "tiny " << s.m << "x" << s.n << "x" << s.k << " " << ta << tb << acc;
                }
    }
}

TEST(CudaTileChoice, TheTinyTileWhereTheSmallOneLeavesSmsIdle) {
    EXPECT_TRUE(cuda::tiny_tile_for(8, 132));  // SmallCNN conv1's wgrad: 8 sample groups
    EXPECT_TRUE(cuda::tiny_tile_for(131, 132));
    EXPECT_FALSE(cuda::tiny_tile_for(132, 132));
    EXPECT_TRUE(cuda::tiny_tile_for(113, 114));  // the device's own count decides
    EXPECT_FALSE(cuda::tiny_tile_for(114, 114));
    EXPECT_TRUE(cuda::tiny_tile_for(131, 0));  // not probed: an H100 SXM's 132
    EXPECT_FALSE(cuda::tiny_tile_for(132, 0));
    // SmallCNN's first fc layer at batch 128 (128 x 32): one small tile.
    const GemmParams fc{.m = 128, .n = 32, .k = 288, .trans_b = true};
    EXPECT_EQ(cuda::gemm_tiles<cuda::SmallTile>(fc), 4);
    EXPECT_EQ(cuda::gemm_tiles<cuda::TinyTile>(fc), 16);
}

TEST(CudaTileChoice, TheLargeTileWhereItsBlocksFillAWaveInsideC) {
    // A wave: three blocks per SM; inside C: 4 large tiles' blocks at most 1.25 small ones'.
    EXPECT_TRUE(cuda::large_tile_for(396, 4 * 396, 132));
    EXPECT_FALSE(cuda::large_tile_for(395, 4 * 395, 132));
    EXPECT_TRUE(cuda::large_tile_for(342, 4 * 342, 114));  // the device's own count decides
    EXPECT_FALSE(cuda::large_tile_for(341, 4 * 341, 114));
    EXPECT_FALSE(cuda::large_tile_for(395, 4 * 395, 0));  // not probed: an H100 SXM's 132
    EXPECT_TRUE(cuda::large_tile_for(500, 1600, 132));    // 2000 <= 2000
    EXPECT_FALSE(cuda::large_tile_for(500, 1599, 132));
    // ResNet-18's (CIFAR, batch 128) forward of layer1 (64 x 131072) takes it, layer4's
    // (512 x 2048: 128 blocks) does not, nor SmallCNN's conv1 forward (16 x 100352: the large
    // tiles' 64 rows would be three quarters outside C, the small tiles' 32 half).
    const auto large = [](int64_t m, int64_t n) {
        return cuda::large_tile_for(cuda::tile_count<cuda::LargeTile>(m, n),
                                    cuda::tile_count<cuda::SmallTile>(m, n), 132);
    };
    EXPECT_TRUE(large(64, 128 * 32 * 32));
    EXPECT_FALSE(large(512, 128 * 4 * 4));
    EXPECT_FALSE(large(16, 128 * 28 * 28));
}

}  // namespace
}  // namespace dt::kernels
