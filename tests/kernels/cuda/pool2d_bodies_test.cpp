// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA pooling kernels (kernels/cuda/pool2d_bodies.h) over every
// thread of their launch grids on the host, against the CPU kernels: forward outputs and argmax
// bitwise; the backward's gather bitwise in tree, kahan, exact and permuted on overlapping
// windows (3x3 stride 1 and stride 2, with padding) and without overlap (2x2 stride 2); close
// under atomic. Inputs hold ties and a NaN (max pooling's first-maximum and NaN rules).
#include "kernels/cuda/pool2d_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cuda/elementwise_bodies.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

Pool2dParams shape(int kernel, int stride, int padding) {
    Pool2dParams p;
    p.N = 2, p.C = 3, p.H = 9, p.W = 7;
    p.kernel = kernel, p.stride = stride, p.padding = padding;
    p.Ho = pool2d_out_size(p.H, kernel, stride, padding);
    p.Wo = pool2d_out_size(p.W, kernel, stride, padding);
    return p;
}

/// The launcher's backward sequence (kernels/cuda/pool2d.cu) on the host.
std::vector<float> backward_on_grid(const cuda::PoolContrib& src, const Pool2dParams& p) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    std::vector<float> dx(static_cast<std::size_t>(planes * in), NAN);
    const common::AccumMode mode = p.stride < p.kernel ? p.accum.mode : common::AccumMode::kTree;
    if (mode == common::AccumMode::kAtomic) {
        std::fill(dx.begin(), dx.end(), 0.0f);
        for_each_thread(cuda::elementwise_blocks(planes * out), cuda::kElementwiseThreads,
                        [&](const GridPos& t) {
                            cuda::pool_backward_atomic_body(t, src, dx.data(), p,
                                                            cuda::pool_out_divisors(p));
                        });
        return dx;
    }
    std::vector<uint32_t> order(static_cast<std::size_t>(out)), rank(static_cast<std::size_t>(out));
    for_each_thread(
        1, 1, [&](const GridPos& t) { cuda::pool_rank_body(t, order.data(), rank.data(), p); });
    for_each_thread(cuda::elementwise_blocks(planes * in), cuda::kElementwiseThreads,
                    [&](const GridPos& t) {
                        cuda::pool_backward_gather_body(t, src, rank.data(), dx.data(), p,
                                                        cuda::pool_in_divisors(p));
                    });
    return dx;
}

TEST(CudaPool2dBodies, ForwardAndEveryBackwardModeEqualTheCpu) {
    for (const Pool2dParams& geometry :
         {shape(3, 1, 1), shape(3, 2, 1), shape(2, 2, 0), shape(5, 3, 2)}) {
        SCOPED_TRACE(testing::Message() << geometry.kernel << "/" << geometry.stride);
        const int64_t planes = geometry.N * geometry.C, in = geometry.H * geometry.W,
                      out = geometry.Ho * geometry.Wo;
        std::vector<float> x = test::uniform_floats(planes * in, -1.0f, 1.0f, test::test_seed(), 4);
        x[10] = x[11] = x[17] = 5.0f;                          // ties
        x[in + 20] = std::numeric_limits<float>::quiet_NaN();  // NaN wins its windows
        const std::vector<float> dy =
            test::uniform_floats(planes * out, -1.0f, 1.0f, test::test_seed(), 5);
        // forward
        std::vector<float> y(planes * out), want_y(planes * out), ay(planes * out),
            want_ay(planes * out), gy(planes), want_gy(planes), gdx(planes * in),
            want_gdx(planes * in);
        std::vector<int32_t> am(planes * out, -1), want_am(planes * out, -2);
        cpu::maxpool2d_forward(x.data(), want_y.data(), want_am.data(), geometry);
        cpu::avgpool2d_forward(x.data(), want_ay.data(), geometry);
        cpu::global_avgpool_forward(x.data(), want_gy.data(), planes, in);
        cpu::global_avgpool_backward(dy.data(), want_gdx.data(), planes, in);
        for_each_thread(3, 32, [&](const GridPos& t) {
            cuda::maxpool2d_forward_body(t, x.data(), y.data(), am.data(), geometry,
                                         cuda::pool_out_divisors(geometry));
            cuda::avgpool2d_forward_body(t, x.data(), ay.data(), geometry,
                                         cuda::pool_out_divisors(geometry));
            cuda::global_avgpool_forward_body(t, x.data(), gy.data(), planes, in);
            cuda::global_avgpool_backward_body(t, dy.data(), gdx.data(), planes,
                                               common::make_divisor(in));
        });
        EXPECT_TRUE(test::bitwise_equal(y.data(), want_y.data(), planes * out));
        EXPECT_EQ(am, want_am);
        EXPECT_TRUE(test::bitwise_equal(ay.data(), want_ay.data(), planes * out));
        EXPECT_TRUE(test::bitwise_equal(gy.data(), want_gy.data(), planes));
        EXPECT_TRUE(test::bitwise_equal(gdx.data(), want_gdx.data(), planes * in));
        // backward, every mode
        for (const common::AccumSpec& spec : test::all_mode_specs(41)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            Pool2dParams p = geometry;
            p.accum = spec;
            for (bool max : {true, false}) {
                SCOPED_TRACE(max ? "max" : "avg");
                std::vector<float> want(planes * in, NAN);
                if (max) {
                    cpu::maxpool2d_backward(dy.data(), want_am.data(), want.data(), p);
                } else {
                    cpu::avgpool2d_backward(dy.data(), want.data(), p);
                }
                const std::vector<float> got = backward_on_grid(
                    cuda::PoolContrib{dy.data(), max ? want_am.data() : nullptr}, p);
                if (spec.mode == common::AccumMode::kAtomic) {
                    for (int64_t i = 0; i < planes * in; ++i)
                        EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
                } else {
                    EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), planes * in));
                }
            }
        }
    }
}

}  // namespace
}  // namespace dt::kernels
