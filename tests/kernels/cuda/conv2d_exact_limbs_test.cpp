// SPDX-License-Identifier: MIT
// conv.wgrad's exact mode with limb atomics on the host: the fold block program
// (kernels/cuda/conv2d_tiled_bodies.h conv_wgrad_exact_fold_block: a group of samples' chains cut
// at every sample's end, each output's leaves folded into a running double, moved into
// accumulators shared by all blocks with integer atomics) run with real barriers and real
// atomics from two host threads at once, rounded once, against the CPU's exact mode bitwise; and
// the group size rule of its launcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/grid.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/launch_shape.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

TEST(CudaConv2dExactLimbs, ExactWgradWithLimbAtomicsGivesTheExactBits) {
    // The limb-atomic way (conv_wgrad_exact_fold_block): blocks of G samples whose threads fold
    // their outputs' per-sample leaves into running doubles and move them into accumulators
    // shared by all blocks with atomics, the blocks split between two host threads running at
    // once (real atomics, interleaved), then one rounding: the CPU's exact bits for every tile
    // shape and group size. Pairs of samples that cancel, scaled far above the others, make
    // every sum far below its largest leaves and the doubles move; an infinite dy makes
    // infinite and NaN leaves. Shapes: many samples, dead taps, rows and columns told apart,
    // positions per sample (the cuts) a multiple of the chunk of 8 terms or not, and fewer than
    // one (P = 4, P = 1).
    for (const Conv2dParams& shape :
         {test::geom(40, 2, 8, 8, 3, 3, 3, 1, 1), test::geom(2, 3, 2, 2, 2, 7, 7, 1, 3),
          test::geom(33, 4, 5, 5, 2, 1, 1, 1, 0), test::geom(5, 2, 5, 7, 3, 3, 2, 2, 1),
          test::geom(9, 3, 3, 3, 5, 3, 3, 1, 0)}) {
        for (const bool with_inf : {false, true}) {
            SCOPED_TRACE(test::describe(shape) + (with_inf ? ", an infinite dy" : ""));
            Conv2dParams p = shape;
            p.accum = common::accum_spec(common::AccumMode::kExact);
            const int64_t X = p.n * p.ci * p.h * p.w, Y = p.n * p.co * p.ho * p.wo,
                          Wn = p.co * p.ci * p.kh * p.kw, per_sample = Y / p.n;
            std::vector<float> x = test::signed_uniform(X, 5), dy = test::signed_uniform(Y, 6);
            // Samples 1 and 2, 3 and 4, ... cancel (the second's x is the first's, its dy the
            // negated dy: its leaves are the negated leaves), their dy scaled by 2^10 .. 2^50;
            // the others' by 2^-60. So every output's exact sum is far below its group's largest
            // leaves, which a running double that rounded would have kept instead of the small
            // ones, and its doubles move often.
            const int64_t x_per_sample = X / p.n;
            for (int64_t s = 0; s < p.n; ++s) {
                const bool second = s % 2 == 0 && s > 0, first = s % 2 == 1 && s + 1 < p.n;
                const int e = first || second ? 10 + static_cast<int>((s - second) * 37 % 41) : -60;
                for (int64_t i = s * per_sample; i < (s + 1) * per_sample; ++i)
                    dy[i] = second ? -dy[i - per_sample] : std::ldexp(dy[i], e);
                if (second)
                    std::copy_n(x.begin() + (s - 1) * x_per_sample, x_per_sample,
                                x.begin() + s * x_per_sample);
            }
            if (with_inf) dy[Y / 2] = INFINITY;
            std::vector<float> want(Wn);
            cpu::conv2d_backward_weight(x.data(), dy.data(), want.data(), p);
            auto limb_atomics = [&](auto shape_tag, int64_t G) {
                using S = decltype(shape_tag);
                std::vector<common::ExactAcc> accs(static_cast<std::size_t>(Wn));
                common::exact_init_row(accs.data(), Wn);
                const uint32_t blocks = static_cast<uint32_t>(
                    (p.n + G - 1) / G * cuda::conv_wgrad_tiles<S>(p, 0, p.co));
                auto half = [&](uint32_t first) {  // blocks first, first + 2, ...
                    test::run_blocks(
                        (blocks - first + 1) / 2, S::kThreads, cuda::kWgradFoldShared<S>,
                        [&](const GridPos& t, float* shared, const auto& sync) {
                            const GridPos b{2 * t.block + first, t.thread, blocks, t.threads};
                            cuda::conv_wgrad_exact_fold_block<S>(b, shared, sync, x.data(),
                                                                 dy.data(), p, G, accs.data());
                        });
                };
                std::thread a(half, 0u), b(half, 1u);
                a.join(), b.join();
                std::vector<float> got(Wn, NAN);
                for_each_thread(2, 32, [&](const GridPos& t) {
                    cuda::conv2d_wgrad_exact_round_body(t, accs.data(), got.data(), Wn);
                });
                return got;
            };
            for (const int64_t G : {int64_t{1}, int64_t{3}, int64_t{16}, int64_t{64}}) {
                SCOPED_TRACE(testing::Message() << G << " samples a block");
                EXPECT_TRUE(test::bitwise_equal(limb_atomics(cuda::SmallTile{}, G), want));
                EXPECT_TRUE(test::bitwise_equal(limb_atomics(cuda::TinyTile{}, G), want));
            }
            EXPECT_TRUE(test::bitwise_equal(limb_atomics(cuda::LargeTile{}, 3), want)) << "large";
        }
    }
}

TEST(CudaConv2dExactLimbs, ExactWgradGroupsKeepTheSmsBusy) {
    // wgrad_fold_group: 64 samples a block where that still makes four waves of blocks (a wave:
    // the program's blocks a SM on every SM), fewer where it does not, one at least (ResNet-18's
    // wgrads at batch 128 on 132 SMs: small tiles four a SM, 2112 blocks wanted; large tiles two
    // a SM, 1056).
    constexpr int kSmall = cuda::kCutMinBlocks<cuda::SmallTile>,
                  kLarge = cuda::kCutMinBlocks<cuda::LargeTile>;
    static_assert(kSmall == 4 && kLarge == 2);
    EXPECT_EQ(cuda::wgrad_fold_group(128, 1152, 132, kSmall), 64);  // layer4: 2 x 1152 = 2304
    EXPECT_EQ(cuda::wgrad_fold_group(128, 288, 132, kSmall), 16);   // layer3: 8 x 288 = 2304
    EXPECT_EQ(cuda::wgrad_fold_group(128, 72, 132, kSmall), 4);     // layer2: 32 x 72 = 2304
    EXPECT_EQ(cuda::wgrad_fold_group(128, 18, 132, kSmall), 1);     // layer1: 128 x 18 = 2304
    EXPECT_EQ(cuda::wgrad_fold_group(128, 288, 132, kLarge), 32);   // layer4 large: 4 x 288 = 1152
    EXPECT_EQ(cuda::wgrad_fold_group(128, 72, 132, kLarge), 8);     // layer3 large: 16 x 72 = 1152
    EXPECT_EQ(cuda::wgrad_fold_group(128, 1, 132, cuda::kCutMinBlocks<cuda::TinyTile>),
              1);  // SmallCNN conv1, tiny tile
    EXPECT_EQ(cuda::wgrad_fold_group(3, 1, 0, kSmall), 1);
    EXPECT_EQ(cuda::wgrad_fold_group(128, 20, 0, kSmall),
              cuda::wgrad_fold_group(128, 20, 132, kSmall));
}

TEST(CudaConv2dExactLimbs, SampleLeafBlocksShareTheirSetUpWhereSamplesAreShort) {
    // wgrad_leaf_block_samples: enough samples a block for 256 terms, within the same four waves:
    // ResNet-18's per-sample leaves at batch 128.
    constexpr int kSmall = cuda::kCutMinBlocks<cuda::SmallTile>,
                  kLarge = cuda::kCutMinBlocks<cuda::LargeTile>;
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 16, 1152, 132, kSmall), 16);  // layer4: 8 x 1152
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 64, 288, 132, kSmall), 4);    // layer3: 32 x 288
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 256, 72, 132, kSmall), 1);    // layer2
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 1024, 18, 132, kSmall), 1);   // layer1
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 16, 288, 132, kLarge), 16);   // layer4 large
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 1, 1152, 132, kSmall), 64);   // at most 64
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 16, 20, 132, kSmall), 1);     // few tiles: one
    EXPECT_EQ(cuda::wgrad_leaf_block_samples(128, 16, 20, 132, kLarge), 2);     // 64 x 20 = 1280
}

}  // namespace
}  // namespace dt::kernels
