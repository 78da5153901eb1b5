// SPDX-License-Identifier: MIT
// The CUDA layer-norm kernels' bodies (kernels/cuda/layer_norm_bodies.h: the row block programs,
// with real barriers, tests/support/block_runner.h; dgamma and dbeta by the per-channel totals of
// channel_totals_bodies.h, both of the launcher's ways) over whole launch grids on the host,
// against the CPU kernels: y, mean, rstd, dx, dgamma and dbeta bitwise in tree, kahan, exact and
// permuted; in atomic the row sums are tree's (y, mean, rstd, dx bitwise) and dgamma, dbeta close.
// Grids: the launcher's (a block per 8 tokens) and two blocks striding over every token.
#include "kernels/cuda/layer_norm_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "kernels/common/accum_permuted.h"
#include "tests/support/block_runner.h"
#include "tests/support/channel_totals_grid.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::GridPos;
using Vec = std::vector<float>;

/// Every mode for `shape`, the row programs on `blocks` blocks (0: the launcher's grid) and the
/// per-channel totals' leaves the staged way or a thread per row.
void every_mode(const LayerNormParams& shape, uint32_t blocks, bool staged) {
    const int64_t n = shape.M * shape.C, C = shape.C, M = shape.M;
    // A large offset, so that the modes round differently.
    const Vec x = test::uniform_floats(n, 99.0f, 101.0f, test::test_seed(), 6),
              dy = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 7),
              gamma = test::uniform_floats(C, 0.5f, 1.5f, test::test_seed(), 8),
              beta = test::uniform_floats(C, -1.0f, 1.0f, test::test_seed(), 9);
    const uint32_t grid = blocks > 0 ? blocks : cuda::ln_grid(M);
    for (const common::AccumSpec& spec : test::all_mode_specs(51)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const bool atomic = spec.mode == common::AccumMode::kAtomic;
        LayerNormParams p = shape;
        p.accum = spec;
        Vec wy(n), wm(M), wr(M), wdx(n), wdg(C), wdb(C);
        cpu::layer_norm_forward(x.data(), gamma.data(), beta.data(), wy.data(), wm.data(),
                                wr.data(), p);
        cpu::layer_norm_backward(dy.data(), x.data(), wm.data(), wr.data(), gamma.data(),
                                 wdx.data(), wdg.data(), wdb.data(), p);
        // The launcher's sequence on the host: the leaves' order (permuted) drawn as
        // permutation_on_device draws it, the forward program, then G, then the dx program.
        std::vector<uint32_t> order(static_cast<std::size_t>(layer_norm_leaves(C)));
        if (spec.mode == common::AccumMode::kPermuted)
            common::permute_order(order.data(), layer_norm_leaves(C), spec.permute_key);
        Vec y(n, NAN), mean(M, NAN), rstd(M, NAN), dx(n, NAN);
        test::run_blocks(grid, cuda::kLnThreads, cuda::kLnSharedFloats,
                         [&](const GridPos& t, float* shared, const test::HostSync& sync) {
                             cuda::ln_forward_block(t, shared, sync, x.data(), gamma.data(),
                                                    beta.data(), y.data(), mean.data(), rstd.data(),
                                                    p, order.data());
                         });
        const Vec totals = test::channel_totals_on_grid<2>(
            cuda::LnGradTerm{x.data(), dy.data(), mean.data(), rstd.data(), p.T, C},
            cuda::ln_grad_totals(p), staged);
        const Vec db(totals.begin(), totals.begin() + C), dg(totals.begin() + C, totals.end());
        test::run_blocks(grid, cuda::kLnThreads, cuda::kLnSharedFloats,
                         [&](const GridPos& t, float* shared, const test::HostSync& sync) {
                             cuda::ln_backward_dx_block(t, shared, sync, dy.data(), x.data(),
                                                        mean.data(), rstd.data(), gamma.data(),
                                                        dx.data(), p, order.data());
                         });
        test::expect_bits_or_close(y, wy, false, "y");
        test::expect_bits_or_close(mean, wm, false, "mean");
        test::expect_bits_or_close(rstd, wr, false, "rstd");
        test::expect_bits_or_close(dx, wdx, false, "dx");
        test::expect_bits_or_close(dg, wdg, atomic, "dgamma");
        test::expect_bits_or_close(db, wdb, atomic, "dbeta");
    }
}

TEST(CudaLayerNormBodies, EveryModeEqualsTheCpu) {
    // C = 1; odd C with a partial last block of tokens; 32 + a tail; GPT-2's C with sequences
    // of 40 tokens (the staged leaves: rows of 40 positions).
    for (const LayerNormParams& shape :
         {LayerNormParams{.M = 6, .C = 1, .T = 3}, LayerNormParams{.M = 35, .C = 7, .T = 5},
          LayerNormParams{.M = 11, .C = 45, .T = 1}, LayerNormParams{.M = 80, .C = 768, .T = 40}}) {
        // The launcher's grid with the staged leaves, and two blocks with a thread per row.
        for (const auto& [blocks, staged] : {std::pair{0u, true}, std::pair{2u, false}}) {
            SCOPED_TRACE(testing::Message() << "M=" << shape.M << " C=" << shape.C << " grid "
                                            << blocks << (staged ? " staged" : " rows"));
            every_mode(shape, blocks, staged);
        }
    }
}

TEST(CudaLayerNormBodies, TheGridCoversEveryTokenOnce) {
    // One block per 8 tokens, at least one, at most the elementwise limit.
    EXPECT_EQ(cuda::ln_grid(0), 1u);
    EXPECT_EQ(cuda::ln_grid(8), 1u);
    EXPECT_EQ(cuda::ln_grid(9), 2u);
    EXPECT_EQ(cuda::ln_grid(int64_t{1} << 40), cuda::kElementwiseMaxBlocks);
}

}  // namespace
}  // namespace dt::kernels
