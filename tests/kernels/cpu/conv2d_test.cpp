// SPDX-License-Identifier: MIT
// Pins the conv2d recipes of kernels/conv2d.h: forward, conv.dgrad and conv.wgrad equal a naive
// float evaluation of the stated ORDER bit for bit on every ISA path; they lie within derived
// bounds of the double reference (c * eps32 * the same sums over |terms|, c = terms per sum plus
// tree depth); and no thread count changes a bit. Shapes: odd sizes, strides 1-3, padding,
// kernels 1, 2x3, 3, 5, 7, batches of one and of several wgrad groups (conv2d_tree_group) and more
// groups than one wave (16 groups), more positions than one GEMM K block (256).
#include "kernels/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/gemm.h"
#include "kernels/ref/conv2d_order_ref.h"
#include "kernels/ref/conv2d_ref.h"
#include "tests/support/compare.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/layer_kernels.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using test::geom, test::xsize, test::wsize, test::ysize, test::describe;

const Conv2dParams kCases[] = {
    geom(3, 2, 7, 5, 3, 3, 3, 1, 1),
    geom(2, 3, 9, 9, 4, 3, 3, 2, 1),
    geom(2, 1, 8, 8, 5, 1, 1, 1, 0),
    geom(5, 2, 6, 7, 3, 1, 1, 2, 0),
    geom(2, 2, 11, 9, 3, 7, 7, 1, 3),
    geom(3, 1, 13, 13, 4, 7, 7, 2, 2),
    geom(17, 3, 5, 5, 2, 3, 3, 1, 1),
    geom(2, 2, 6, 8, 3, 2, 3, 1, 0),
    geom(4, 3, 10, 10, 2, 5, 5, 3, 0),
    geom(2, 2, 9, 9, 3, 1, 1, 3, 1),
    geom(1, 5, 14, 14, 33, 3, 3, 1, 1),
    geom(2, 2, 20, 19, 3, 3, 3, 1, 1),  // P > GEMM K block
    geom(2, 1, 33, 35, 2, 5, 5, 2, 2),
    geom(3, 2, 6, 6, 3, 3, 3, 1, 0),
    // Padding as wide as the image (MediumCNN's deepest layers with k = 5, 7 on 1x1 and 2x2).
    geom(2, 2, 1, 1, 3, 7, 7, 1, 3),
    geom(2, 3, 2, 2, 4, 5, 5, 1, 2),
    geom(1, 2, 3, 2, 3, 7, 7, 1, 3),
    geom(4, 3, 1, 1, 5, 3, 3, 1, 1),
    geom(2, 2, 1, 1, 3, 1, 1, 2, 1),    // every tap dead: y = b, dx = dw = 0
    geom(3, 6, 1, 1, 4, 3, 3, 1, 1),    // dead taps, more live rows than Co: (RL, Co) leaves
    geom(260, 1, 8, 8, 2, 3, 3, 1, 1),  // 17 wgrad groups (of 16): more than one wave of 16
    geom(300, 1, 3, 3, 2, 3, 3, 1, 1),  // P = 9: 3 wgrad groups (of 128)
    // Few live rows and Co = 16 / 32: the direct wgrad leaf of the AVX-512 path (two groups,
    // one row block; two row blocks with a short last one; stride 2 with 25 rows). P = 90, 42
    // and 25: dy's 16 x 16 transposes and a tail of positions.
    geom(20, 1, 9, 10, 16, 3, 3, 1, 1),
    geom(40, 3, 7, 6, 32, 3, 3, 1, 1),
    geom(130, 1, 9, 9, 16, 5, 5, 2, 2),
    // Leaves small enough for the direct wgrad leaf with more rows: Co = 32 with 36 rows,
    // Co = 64 with 50 rows (blocks of 6), Co = 128 in two channel blocks, stride 2. Batches of
    // two or more tree groups, so that the groups run side by side and take that path.
    geom(40, 4, 9, 9, 32, 3, 3, 1, 1),
    geom(70, 2, 6, 6, 64, 5, 5, 1, 2),
    geom(130, 5, 7, 7, 128, 3, 3, 2, 1),
    // Sample chunks (P < kChunkPositions): a wgrad group split into two chained chunks, and
    // several forward/dgrad chunks with a short last one.
    geom(20, 2, 10, 9, 3, 3, 3, 1, 1),
    geom(70, 3, 4, 4, 5, 3, 3, 1, 1),
    // Stride 1 with Wp - Wo >= Wo / 8 and >= 64 output channels: forward on packed run panels
    // instead of flat rows (Co = 64 forward; Ci = 64 for the dgrad, a forward with Co' = Ci).
    geom(2, 3, 16, 16, 64, 3, 3, 1, 1),
    geom(2, 64, 12, 10, 3, 5, 5, 1, 2),
};

// The recipe's ORDER as plain float loops (kernels/ref/conv2d_order_ref.h).
constexpr test::LayerKernels<float, Conv2dParams> kOrder{
    ref::conv2d_forward_order, ref::conv2d_backward_data_order, ref::conv2d_backward_weight_order};

test::LayerData make_data(const Conv2dParams& p, uint64_t seed) {
    return test::layer_data(xsize(p), wsize(p), p.co, ysize(p), seed);
}

TEST(Conv2d, TreeGroupIsThePowerOfTwoTheRecipeNames) {
    // Part of the wgrad tree recipe (kernels/conv2d.h): >= 16, a power of two, and the least
    // one whose leaf chains at least kConv2dTreeLeafTerms products per element.
    EXPECT_EQ(conv2d_tree_group(1024), 16);
    EXPECT_EQ(conv2d_tree_group(64), 16);
    EXPECT_EQ(conv2d_tree_group(63), 32);
    EXPECT_EQ(conv2d_tree_group(49), 32);  // SmallCNN conv3: 4 leaves at batch 128
    EXPECT_EQ(conv2d_tree_group(16), 64);
    EXPECT_EQ(conv2d_tree_group(4), 256);
    EXPECT_EQ(conv2d_tree_group(1), 1024);
    EXPECT_EQ(conv2d_tree_group(0), 1024);
}

TEST(Conv2d, EveryIsaMatchesTheOrderBitwise) {
    for (const Conv2dParams& p : kCases) {
        SCOPED_TRACE("n,ci,h,w,co,kh,kw,stride,pad = " + describe(p));
        const test::LayerData d = make_data(p, test::test_seed());
        test::expect_every_isa_gives(kOrder.run(d, p),
                                     [&] { return test::kConv2d.cpu.run(d, p, 9.0f); });
    }
}

TEST(Conv2d, WithinDerivedBoundOfDoubleReference) {
    for (const Conv2dParams& p : kCases) {
        SCOPED_TRACE("n,ci,h,w,co,kh,kw,stride,pad = " + describe(p));
        const test::LayerData d = make_data(p, test::test_seed() + 1);
        const double R = p.ci * p.kh * p.kw, P = p.ho * p.wo;
        // wgrad: a group leaf chains up to G * P terms, then a tree over the groups.
        const int64_t G = std::min<int64_t>(p.n, conv2d_tree_group(p.ho * p.wo));
        const double depth =
            std::ceil(std::log2(static_cast<double>((p.n + G - 1) / G))) + (G - 1) * P;
        // dgrad: Co-term chains and a Kh*Kw-term sum, or one chain of Co*Kh*Kw terms (fused).
        const double cd = conv2d_dgrad_is_forward(p) ? p.co * p.kh * p.kw : p.co + p.kh * p.kw;
        test::expect_within_reference_bounds(test::kConv2d.cpu.run(d, p, 9.0f), d,
                                             test::kConv2d.ref, p,
                                             {.y = R + 2, .dx = cd + 1, .dw = P + depth + 2});
    }
}

TEST(Conv2d, ThreadCountChangesNoBit) {
    // 37 samples: three wgrad waves, the last partial; and a single sample (parallel GEMM path).
    for (const Conv2dParams& p :
         {geom(37, 4, 10, 9, 8, 3, 3, 1, 1), geom(1, 16, 14, 14, 32, 3, 3, 1, 1),
          geom(19, 2, 9, 9, 500, 3, 3, 2, 1)}) {
        SCOPED_TRACE(describe(p));
        const test::LayerData d = make_data(p, test::test_seed() + 2);
        test::expect_layer_same_bits_at_thread_counts(
            [&] { return test::kConv2d.cpu.run(d, p, 9.0f); });
    }
}

TEST(Conv2d, NoBiasAndUncoveredInputsAreZero) {
    // stride 3 with a 1x1 kernel leaves input pixels no output reads: their gradient is +0.
    const Conv2dParams p = geom(2, 2, 7, 7, 3, 1, 1, 3, 0);
    const test::LayerData d = make_data(p, test::test_seed() + 3);
    std::vector<float> y(ysize(p)), y0(ysize(p)), dx(xsize(p), 5.0f);
    std::vector<float> zeros(p.co, 0.0f);
    cpu::conv2d_forward(d.x.data(), d.w.data(), nullptr, y.data(), p);
    cpu::conv2d_forward(d.x.data(), d.w.data(), zeros.data(), y0.data(), p);
    EXPECT_TRUE(test::bitwise_equal(y, y0));  // +0 bias changes no (never -0) sum
    cpu::conv2d_backward_data(d.dy.data(), d.w.data(), dx.data(), p);
    EXPECT_EQ(test::bits(dx[1]), 0u);
    EXPECT_NE(dx[0], 0.0f);
}

}  // namespace
}  // namespace dt::kernels
