// SPDX-License-Identifier: MIT
// The CUDA conv2d kernels' bodies on the host against the CPU kernels, routed as the launcher
// routes them: the tiled forward block program (also dgrad's tree on 3x3-'same' shapes) with
// real barriers (tests/support/block_runner.h), the per-element backward bodies
// (kernels/cuda/conv2d_bodies.h) over every thread of a grid: forward with and without bias,
// dgrad and wgrad in tree, kahan, exact and permuted bitwise, atomic close. Shapes: 3x3 'same'
// (dgrad as the transposed forward), 3x3 stride 2 (dgrad's tap sums), 7x7 on a 2x2 map (dead taps),
// 1x1, and a batch of 40 on an 8x8 map (three tree groups of conv.wgrad).
#include "kernels/cuda/conv2d_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/linear_bodies.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

Conv2dParams conv(int64_t n, int64_t ci, int64_t hw, int64_t co, int64_t k, int64_t stride,
                  int64_t pad) {
    Conv2dParams p{n, ci, hw, hw, co, k, k, stride, pad};
    p.ho = (hw + 2 * pad - k) / stride + 1;
    p.wo = p.ho;
    return p;
}

/// The tiled forward's block program over all its blocks, with real barriers.
template <class Weight>
void forward_tiled(const float* x, const Weight& wt, const float* b, float* y,
                   const Conv2dParams& q) {
    test::run_blocks(static_cast<uint32_t>(cuda::conv_tiles(q)), cuda::kConvTileThreads,
                     cuda::kConvTiledShared,
                     [&](const GridPos& t, float* shared, const auto& sync) {
                         cuda::conv_forward_tiled_block(t, shared, sync, x, wt, b, y, q);
                     });
}

std::vector<float> uniform(int64_t n, uint32_t tag) {
    return test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), tag);
}

TEST(CudaConv2dBodies, ForwardAndEveryBackwardModeEqualTheCpu) {
    for (const Conv2dParams& shape :
         {conv(3, 2, 6, 4, 3, 1, 1), conv(3, 2, 7, 3, 3, 2, 1), conv(2, 3, 2, 2, 7, 1, 3),
          conv(3, 4, 5, 2, 1, 1, 0), conv(40, 2, 8, 3, 3, 1, 1)}) {
        SCOPED_TRACE(testing::Message() << "n" << shape.n << " hw" << shape.h << " k" << shape.kh
                                        << " s" << shape.stride << " p" << shape.pad);
        const int64_t X = shape.n * shape.ci * shape.h * shape.w,
                      Y = shape.n * shape.co * shape.ho * shape.wo,
                      Wn = shape.co * shape.ci * shape.kh * shape.kw;
        const std::vector<float> x = uniform(X, 1), w = uniform(Wn, 2), b = uniform(shape.co, 3),
                                 dy = uniform(Y, 4);
        for (bool bias : {true, false}) {
            std::vector<float> want(Y), got(Y, NAN);
            cpu::conv2d_forward(x.data(), w.data(), bias ? b.data() : nullptr, want.data(), shape);
            forward_tiled(x.data(), cuda::ConvWeight{w.data(), shape.ci, shape.kh, shape.kw},
                          bias ? b.data() : nullptr, got.data(), shape);
            EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), Y)) << "forward " << bias;
        }
        for (const common::AccumSpec& spec : test::all_mode_specs(71)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            Conv2dParams p = shape;
            p.accum = spec;
            std::vector<float> want_dx(X), want_dw(Wn), dx(X, 0.0f), dw(Wn, 0.0f);
            cpu::conv2d_backward_data(dy.data(), w.data(), want_dx.data(), p);
            cpu::conv2d_backward_weight(x.data(), dy.data(), want_dw.data(), p);
            if (spec.mode == common::AccumMode::kAtomic) {
                for_each_thread(3, 32, [&](const GridPos& t) {
                    cuda::conv2d_dgrad_atomic_body(t, dy.data(), w.data(), dx.data(), p);
                    cuda::conv2d_wgrad_atomic_body(t, x.data(), dy.data(), dw.data(), p);
                });
                for (int64_t i = 0; i < X; ++i) EXPECT_NEAR(dx[i], want_dx[i], 1e-4f) << i;
                for (int64_t i = 0; i < Wn; ++i) EXPECT_NEAR(dw[i], want_dw[i], 1e-3f) << i;
                continue;
            }
            std::vector<uint32_t> taps(p.kh * p.kw), samples(p.n);
            for_each_thread(1, 1, [&](const GridPos& t) {
                cuda::permute_order_body(t, taps.data(), p.kh * p.kw, spec.permute_key);
                cuda::permute_order_body(t, samples.data(), p.n, spec.permute_key);
            });
            std::fill(dx.begin(), dx.end(), NAN);
            std::fill(dw.begin(), dw.end(), NAN);
            // The launcher's routing: tree on 3x3-'same' shapes is the transposed forward.
            const bool as_forward =
                spec.mode == common::AccumMode::kTree && conv2d_dgrad_is_forward(p);
            if (as_forward) {
                forward_tiled(dy.data(), cuda::FlippedWeight{w.data(), p.ci, p.kh}, nullptr,
                              dx.data(), cuda::conv_dgrad_as_forward(p));
            }
            for_each_thread(3, 32, [&](const GridPos& t) {
                if (!as_forward)
                    cuda::conv2d_dgrad_body(t, dy.data(), w.data(), dx.data(), taps.data(), p);
                cuda::conv2d_wgrad_body(t, x.data(), dy.data(), dw.data(), samples.data(), p);
            });
            EXPECT_TRUE(test::bitwise_equal(dx.data(), want_dx.data(), X)) << "dgrad";
            EXPECT_TRUE(test::bitwise_equal(dw.data(), want_dw.data(), Wn)) << "wgrad";
        }
    }
}

TEST(CudaConv2dBodies, ExactWgradWithLimbAtomicsGivesTheExactBits) {
    // The limb-atomic variant's threads merge into shared accumulators from two host threads
    // at once (real atomics, interleaved), then one rounding: the CPU's exact bits. Shapes with
    // several sample groups (40 samples: 3 groups of 16) and dead taps.
    for (const Conv2dParams& shape :
         {conv(40, 2, 8, 3, 3, 1, 1), conv(2, 3, 2, 2, 7, 1, 3), conv(33, 4, 5, 2, 1, 1, 0)}) {
        Conv2dParams p = shape;
        p.accum = common::accum_spec(common::AccumMode::kExact);
        const int64_t X = p.n * p.ci * p.h * p.w, Y = p.n * p.co * p.ho * p.wo,
                      Wn = p.co * p.ci * p.kh * p.kw;
        const std::vector<float> x = uniform(X, 5), dy = uniform(Y, 6);
        std::vector<float> want(Wn), got(Wn, NAN);
        cpu::conv2d_backward_weight(x.data(), dy.data(), want.data(), p);
        std::vector<common::ExactAcc> accs(static_cast<std::size_t>(Wn));
        common::exact_init_row(accs.data(), Wn);
        const uint32_t blocks = 6, threads = 16;
        auto half = [&](uint32_t first) {  // blocks first, first + 2, ...
            for (uint32_t b = first; b < blocks; b += 2)
                for (uint32_t t = 0; t < threads; ++t)
                    cuda::conv2d_wgrad_exact_limbs_body(GridPos{b, t, blocks, threads}, x.data(),
                                                        dy.data(), accs.data(), p);
        };
        std::thread a(half, 0u), b(half, 1u);
        a.join(), b.join();
        for_each_thread(2, 32, [&](const GridPos& t) {
            cuda::conv2d_wgrad_exact_round_body(t, accs.data(), got.data(), Wn);
        });
        EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), Wn)) << "n" << p.n << " k" << p.kh;
    }
}

}  // namespace
}  // namespace dt::kernels
