// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA bias.grad kernels (kernels/cuda/bias_grad_bodies.h) over
// every thread of their launch grids on the host, against the CPU kernel: bitwise in tree, kahan,
// exact and permuted; close under atomic (the GPU adds a partial per row, the CPU per sample
// group: different roundings, on purpose).
// Shapes: a (N, C) matrix, conv-like (N, C, P) with N not a multiple of the CPU's 8-sample
// groups, one with more samples than an atomic group, and rows long enough for the staged
// leaves (kernels/cuda/channel_leaves_staged.h: 35 rows, two blocks; 300 positions, three
// chunks, the last partial), each with the leaves' staged and per-row ways.
#include "kernels/cuda/bias_grad_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "tests/support/channel_totals_grid.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::GridPos;

/// The launcher's sequence (kernels/cuda/bias_grad.cu) with its grids, on the host (`staged`:
/// the leaves' way, as in test::channel_totals_on_grid).
std::vector<float> bias_grad_on_grid(const std::vector<float>& dy, const BiasAddParams& p,
                                     bool staged) {
    return test::channel_totals_on_grid<1>(cuda::BiasGradTerm{dy.data(), p.p},
                                           cuda::bias_grad_totals(p), staged);
}

TEST(CudaBiasGradBodies, EveryModeEqualsTheCpu) {
    for (BiasAddParams shape : {BiasAddParams{37, 10, 1}, BiasAddParams{13, 6, 49},
                                BiasAddParams{40, 3, 7}, BiasAddParams{7, 5, 300}}) {
        const int64_t n = shape.n * shape.c * shape.p;
        std::vector<float> dy = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 3);
        dy[5] = 3e7f, dy[6] = -3e7f;  // cancellation: the modes round differently
        for (const common::AccumSpec& spec : test::all_mode_specs(31)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            BiasAddParams p = shape;
            p.accum = spec;
            std::vector<float> want(static_cast<std::size_t>(p.c), NAN);
            cpu::bias_add_backward(dy.data(), want.data(), p);
            for (const bool staged : {true, false}) {
                const std::vector<float> got = bias_grad_on_grid(dy, p, staged);
                if (spec.mode == common::AccumMode::kAtomic) {
                    for (int64_t c = 0; c < p.c; ++c) EXPECT_NEAR(got[c], want[c], 8.0f) << c;
                } else {
                    EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), p.c))
                        << p.n << "x" << p.c << "x" << p.p << (staged ? " staged" : " rows");
                }
            }
        }
    }
}

TEST(CudaBiasGradBodies, StagedLeavesStrideOverTheirBlocks) {
    // A grid smaller than the row blocks (a launch past kElementwiseMaxBlocks blocks): 105 rows
    // are four blocks of 32, run by two, give the leaves of a block per row block.
    const BiasAddParams p{7, 15, 40};
    const std::vector<float> dy =
        test::uniform_floats(p.n * p.c * p.p, -1.0f, 1.0f, test::test_seed(), 5);
    const cuda::ChannelTotals q = cuda::bias_grad_totals(p);
    ASSERT_EQ(cuda::staged_row_blocks(q), 4);
    std::vector<float> want(static_cast<std::size_t>(p.n * p.c), NAN), got = want;
    for (auto [grid, leaves] : {std::pair<uint32_t, float*>{4u, want.data()}, {2u, got.data()}}) {
        cuda::ChannelLeaves out;
        out.leaves = leaves;
        test::run_blocks(grid, cuda::kStagedThreads, cuda::staged_shared_floats<1>(),
                         [&](const GridPos& t, float* shared, const test::HostSync& sync) {
                             cuda::channel_leaves_staged_block<1>(
                                 t, shared, sync, cuda::BiasGradTerm{dy.data(), p.p}, q, out);
                         });
    }
    EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), p.n * p.c));
    EXPECT_FALSE(std::isnan(want[104]));
}

}  // namespace
}  // namespace dt::kernels
