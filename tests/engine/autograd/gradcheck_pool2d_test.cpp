// SPDX-License-Identifier: MIT
// Double-precision gradient check of the reference pooling backward passes (kernels/ref) against
// central differences, with stride 2 and padding 1 (overlapping 3x3 windows) on odd maps. Max
// pool inputs are a shuffled ramp: distinct values 0.05 apart, so no tie is within h.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/ref/pool2d_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using VecD = std::vector<double>;

Pool2dParams params(int k, int s, int pad) {
    Pool2dParams p;
    p.N = 2, p.C = 2, p.H = 7, p.W = 5, p.kernel = k, p.stride = s, p.padding = pad;
    p.Ho = pool2d_out_size(p.H, k, s, pad);
    p.Wo = pool2d_out_size(p.W, k, s, pad);
    return p;
}

int64_t in_size(const Pool2dParams& p) { return p.N * p.C * p.H * p.W; }
int64_t out_size(const Pool2dParams& p) { return p.N * p.C * p.Ho * p.Wo; }

VecD shuffled_ramp(int64_t n) {
    std::vector<float> key = test::uniform_floats(n, 0.0f, 1.0f, test::test_seed(), 1);
    std::vector<int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return key[a] < key[b]; });
    VecD x(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[order[i]] = -1.0 + 0.05 * static_cast<double>(i);
    return x;
}

TEST(GradcheckPool2d, MaxPool) {
    for (const Pool2dParams& p : {params(3, 2, 1), params(2, 2, 0), params(2, 1, 1)}) {
        const VecD x = shuffled_ramp(in_size(p));
        const VecD dy =
            test::to_double(test::uniform_floats(out_size(p), -1, 1, test::test_seed(), 2));
        std::vector<int32_t> am(out_size(p));
        VecD y(out_size(p)), dx(in_size(p));
        ref::maxpool2d_forward(x.data(), y.data(), am.data(), p);
        ref::maxpool2d_backward(dy.data(), am.data(), dx.data(), p);
        auto f = [&](const VecD& xi) {
            VecD yi(out_size(p));
            std::vector<int32_t> a(out_size(p));
            ref::maxpool2d_forward(xi.data(), yi.data(), a.data(), p);
            return yi;
        };
        EXPECT_TRUE(test::gradcheck(f, x, dy, dx)) << "k=" << p.kernel << " s=" << p.stride;
    }
}

TEST(GradcheckPool2d, AvgPool) {
    for (const Pool2dParams& p : {params(3, 2, 1), params(2, 2, 0), params(2, 1, 1)}) {
        const VecD x =
            test::to_double(test::uniform_floats(in_size(p), -1, 1, test::test_seed(), 3));
        const VecD dy =
            test::to_double(test::uniform_floats(out_size(p), -1, 1, test::test_seed(), 4));
        VecD dx(in_size(p));
        ref::avgpool2d_backward(dy.data(), dx.data(), p);
        auto f = [&](const VecD& xi) {
            VecD yi(out_size(p));
            ref::avgpool2d_forward(xi.data(), yi.data(), p);
            return yi;
        };
        EXPECT_TRUE(test::gradcheck(f, x, dy, dx)) << "k=" << p.kernel << " s=" << p.stride;
    }
}

TEST(GradcheckPool2d, GlobalAvgPool) {
    const int64_t planes = 3, hw = 7;
    const VecD x = test::to_double(test::uniform_floats(planes * hw, -1, 1, test::test_seed(), 5));
    const VecD dy = test::to_double(test::uniform_floats(planes, -1, 1, test::test_seed(), 6));
    VecD dx(planes * hw);
    ref::global_avgpool_backward(dy.data(), dx.data(), planes, hw);
    auto f = [&](const VecD& xi) {
        VecD yi(planes);
        ref::global_avgpool_forward(xi.data(), yi.data(), planes, hw);
        return yi;
    };
    EXPECT_TRUE(test::gradcheck(f, x, dy, dx));
}

}  // namespace
}  // namespace dt::kernels
