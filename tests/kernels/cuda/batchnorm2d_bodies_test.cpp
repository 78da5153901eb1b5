// SPDX-License-Identifier: MIT
// The CUDA batch-norm kernels' bodies (kernels/cuda/batchnorm2d_bodies.h, with the per-channel
// totals of channel_totals_bodies.h) over every thread of their launch grids on the host, in the
// launcher's order, against the CPU kernels: statistics, normalisation, running statistics and
// the backward (training and evaluation) bitwise in tree, kahan, exact and permuted; close under
// atomic. Inputs with a large offset, so that the modes round differently.
#include "kernels/cuda/batchnorm2d_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cuda/elementwise_bodies.h"
#include "tests/support/channel_totals_grid.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

/// Every step and mode for `shape`, with the per-channel totals' leaves run the staged way (where
/// the rows are long enough) or a thread per row.
void every_step_and_mode(const BatchNorm2dParams& shape, bool staged) {
    const int64_t n = shape.N * shape.C * shape.HW, C = shape.C;
    std::vector<float> x = test::uniform_floats(n, 99.0f, 101.0f, test::test_seed(), 6);
    const std::vector<float> dy = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 7),
                             gamma = test::uniform_floats(C, 0.5f, 1.5f, test::test_seed(), 8),
                             beta = test::uniform_floats(C, -1.0f, 1.0f, test::test_seed(), 9),
                             run0 = test::uniform_floats(C, 0.5f, 1.5f, test::test_seed(), 10);
    const uint32_t threads = cuda::kElementwiseThreads;
    for (const common::AccumSpec& spec : test::all_mode_specs(51)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const bool atomic = spec.mode == common::AccumMode::kAtomic;
        BatchNorm2dParams p = shape;
        p.accum = spec;
        // CPU
        std::vector<float> wm(C), wv(C), wis(C), wy(n), wrm = run0, wrv = run0, wdx(n), wdg(C),
                                                        wdb(C), wedx(n), wedg(C), wedb(C);
        cpu::batchnorm2d_stats(x.data(), wm.data(), wv.data(), wis.data(), p);
        cpu::batchnorm2d_apply(x.data(), wm.data(), wis.data(), gamma.data(), beta.data(),
                               wy.data(), p);
        cpu::batchnorm2d_update_running(wrm.data(), wrv.data(), wm.data(), wv.data(), 0.1f, p);
        cpu::batchnorm2d_backward(dy.data(), x.data(), wm.data(), wis.data(), gamma.data(),
                                  wdx.data(), wdg.data(), wdb.data(), true, p);
        cpu::batchnorm2d_backward(dy.data(), x.data(), wm.data(), wis.data(), gamma.data(),
                                  wedx.data(), wedg.data(), wedb.data(), false, p);
        // the CUDA launchers' sequences on the host: the statistics finished by the combines
        // that store their totals (every mode but atomic), or by a kernel after (atomic, and a
        // part of a split batch: checked here in every mode)
        const float count = batchnorm2d_count(p);
        const auto stats = [&](bool in_combine, std::vector<float>& mean, std::vector<float>& var,
                               std::vector<float>& invstd) {
            const cuda::ChannelFinish fm = cuda::bn_mean_finish(count),
                                      fv = cuda::bn_var_finish(count, invstd.data(), p);
            const auto after = [&](std::vector<float>& total, const cuda::ChannelFinish& f) {
                if (in_combine) return;
                for_each_thread(1, 32, [&](const GridPos& t) {
                    cuda::channel_finish_body(t, total.data(), f, C);
                });
            };
            mean = test::channel_totals_on_grid<1>(cuda::BnMeanTerm{x.data(), p.HW},
                                                   cuda::batchnorm_totals(p), staged,
                                                   in_combine ? fm : cuda::ChannelFinish{});
            after(mean, fm);
            var = test::channel_totals_on_grid<1>(cuda::BnVarTerm{x.data(), mean.data(), p.HW},
                                                  cuda::batchnorm_totals(p), staged,
                                                  in_combine ? fv : cuda::ChannelFinish{});
            after(var, fv);
        };
        std::vector<float> mean, var, invstd(C, NAN);
        stats(!atomic, mean, var, invstd);
        if (!atomic) {
            std::vector<float> m2, v2, is2(C, NAN);
            stats(false, m2, v2, is2);
            test::expect_bits_or_close(m2, wm, false, "mean, finished after");
            test::expect_bits_or_close(v2, wv, false, "var, finished after");
            test::expect_bits_or_close(is2, wis, false, "invstd, finished after");
            // batchnorm2d_invstd's body (a split batch's completed var) over a small grid
            std::vector<float> is3(C, NAN);
            for_each_thread(
                1, 2, [&](const GridPos& t) { cuda::bn_invstd_body(t, v2.data(), is3.data(), p); });
            test::expect_bits_or_close(is3, wis, false, "invstd of var");
        }
        std::vector<float> y(n), rm = run0, rv = run0, dx(n), edx(n);
        for_each_thread(cuda::elementwise_blocks(n), threads, [&](const GridPos& t) {
            cuda::bn_apply_body(t, x.data(), mean.data(), invstd.data(), gamma.data(), beta.data(),
                                y.data(), p, common::make_channel_of(p.HW, p.C));
        });
        for_each_thread(1, 2, [&](const GridPos& t) {
            cuda::bn_update_running_body(t, rm.data(), rv.data(), mean.data(), var.data(), 0.1f,
                                         batchnorm2d_count(p), p);
        });
        const std::vector<float> totals = test::channel_totals_on_grid<2>(
            cuda::BnBackwardTerm{x.data(), dy.data(), mean.data(), invstd.data(), p.HW},
            cuda::batchnorm_totals(p), staged);
        const std::vector<float> db(totals.begin(), totals.begin() + C),
            dg(totals.begin() + C, totals.end());
        for (bool training : {true, false}) {
            for_each_thread(3, 64, [&](const GridPos& t) {
                cuda::bn_backward_dx_body(
                    t, dy.data(), x.data(), mean.data(), invstd.data(), gamma.data(), db.data(),
                    dg.data(), training ? dx.data() : edx.data(), training, batchnorm2d_count(p), p,
                    common::make_channel_of(p.HW, p.C));
            });
        }
        test::expect_bits_or_close(mean, wm, atomic, "mean");
        test::expect_bits_or_close(var, wv, atomic, "var");
        test::expect_bits_or_close(invstd, wis, atomic, "invstd");
        test::expect_bits_or_close(y, wy, atomic, "y");
        test::expect_bits_or_close(rm, wrm, atomic, "running_mean");
        test::expect_bits_or_close(rv, wrv, atomic, "running_var");
        test::expect_bits_or_close(db, wdb, atomic, "dbeta");
        test::expect_bits_or_close(dg, wdg, atomic, "dgamma");
        test::expect_bits_or_close(dx, wdx, atomic, "dx");
        test::expect_bits_or_close(edx, wedx, atomic, "eval dx");
    }
}

TEST(CudaBatchNormBodies, EveryStepAndModeEqualsTheCpu) {
    // Rows of 13 positions (a thread per row), and of 300 (the staged leaves: 35 rows in two
    // blocks, three chunks, the last partial) both ways.
    for (const BatchNorm2dParams& shape :
         {BatchNorm2dParams{11, 5, 13, 1e-5f}, BatchNorm2dParams{7, 5, 300, 1e-5f}}) {
        for (const bool staged : {true, false}) {
            SCOPED_TRACE(testing::Message() << shape.HW << (staged ? " staged" : " rows"));
            every_step_and_mode(shape, staged);
        }
    }
}

}  // namespace
}  // namespace dt::kernels
