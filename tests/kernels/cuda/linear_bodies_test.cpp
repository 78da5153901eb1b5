// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA linear kernels (kernels/cuda/linear_bodies.h, the tiled GEMM
// of gemm_tiled_bodies.h for the forward and dgrad's tree mode) over every thread of their launch grids on the host, against
// the CPU kernels: forward with and without bias, dgrad and wgrad bitwise in tree, kahan, exact
// and permuted, close under atomic. Sizes not multiples of any CPU block or GPU tile.
#include "kernels/cuda/linear_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/gemm_tiled_bodies.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

TEST(CudaLinearBodies, ForwardAndEveryBackwardModeEqualTheCpu) {
    const LinearParams shape{19, 45, 11};
    const int64_t N = shape.n, I = shape.in, O = shape.out;
    std::vector<float> x = test::signed_uniform(N * I, 4), w = test::signed_uniform(O * I, 5),
                       b = test::signed_uniform(O, 6), dy = test::signed_uniform(N * O, 7);
    x[3] = 2e4f, x[I + 3] = -2e4f;  // cancellation across samples: the modes round differently
    for (bool bias : {true, false}) {
        std::vector<float> want(N * O), got(N * O);
        cpu::linear_forward(x.data(), w.data(), bias ? b.data() : nullptr, want.data(), shape);
        const GemmParams g{.m = N, .n = O, .k = I, .trans_b = true};
        test::run_blocks(
            static_cast<uint32_t>(cuda::gemm_tiles(g)), cuda::SmallTile::kThreads,
            cuda::SmallTile::kShared, [&](const GridPos& t, float* shared, const auto& sync) {
                cuda::gemm_tiled_block(t, shared, sync, x.data(), w.data(), got.data(), g);
            });
        if (bias) {
            for_each_thread(2, 16, [&](const GridPos& t) {
                cuda::linear_bias_body(t, b.data(), got.data(), shape, common::make_divisor(O));
            });
        }
        EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), N * O)) << bias;
    }
    for (const common::AccumSpec& spec : test::all_mode_specs(61)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        LinearParams p = shape;
        p.accum = spec;
        std::vector<float> want_dx(N * I), want_dw(O * I), dx(N * I, 0.0f), dw(O * I, 0.0f);
        cpu::linear_backward_data(dy.data(), w.data(), want_dx.data(), p);
        cpu::linear_backward_weight(x.data(), dy.data(), want_dw.data(), p);
        if (spec.mode == common::AccumMode::kAtomic) {
            for_each_thread(3, 64, [&](const GridPos& t) {
                cuda::linear_dgrad_atomic_body(t, dy.data(), w.data(), dx.data(), p);
                cuda::linear_wgrad_atomic_body(t, x.data(), dy.data(), dw.data(), p);
            });
            for (int64_t i = 0; i < N * I; ++i) EXPECT_NEAR(dx[i], want_dx[i], 1e-4f) << i;
            for (int64_t i = 0; i < O * I; ++i) EXPECT_NEAR(dw[i], want_dw[i], 1e-2f) << i;
            continue;
        }
        std::vector<uint32_t> in_order(O), n_order(N);
        for_each_thread(1, 1, [&](const GridPos& t) {
            cuda::permute_order_body(t, in_order.data(), O, spec.permute_key);
            cuda::permute_order_body(t, n_order.data(), N, spec.permute_key);
        });
        for_each_thread(3, 64, [&](const GridPos& t) {
            cuda::linear_dgrad_body(t, dy.data(), w.data(), dx.data(), in_order.data(), p);
            cuda::linear_wgrad_body(t, x.data(), dy.data(), dw.data(), n_order.data(), p);
        });
        EXPECT_TRUE(test::bitwise_equal(dx.data(), want_dx.data(), N * I));
        EXPECT_TRUE(test::bitwise_equal(dw.data(), want_dw.data(), O * I));
        if (spec.mode == common::AccumMode::kTree) {  // the launcher's route: the tiled GEMM
            const GemmParams g{.m = N, .n = I, .k = O};
            std::vector<float> tiled(N * I, NAN);
            test::run_blocks(
                static_cast<uint32_t>(cuda::gemm_tiles(g)), cuda::SmallTile::kThreads,
                cuda::SmallTile::kShared, [&](const GridPos& t, float* shared, const auto& sync) {
                    cuda::gemm_tiled_block(t, shared, sync, dy.data(), w.data(), tiled.data(), g);
                });
            EXPECT_TRUE(test::bitwise_equal(tiled.data(), want_dx.data(), N * I)) << "tiled";
        }
    }
}

}  // namespace
}  // namespace dt::kernels
