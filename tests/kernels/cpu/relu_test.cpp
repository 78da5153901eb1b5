// SPDX-License-Identifier: MIT
// ReLU CPU kernel vs the double reference: elementwise, so the results must be exact.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>

#include "kernels/ref/relu_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

TEST(ReluKernel, MatchesReferenceExactly) {
    for (int64_t n : {0, 1, 7, 64, 65537 * 2 + 3}) {
        std::vector<float> x = test::uniform_floats(n, -2.0f, 2.0f, test::test_seed());
        std::vector<float> dy = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 1);
        std::vector<float> y(n), dx(n);
        cpu::relu_forward(x.data(), y.data(), n);
        cpu::relu_backward(x.data(), dy.data(), dx.data(), n);
        std::vector<double> xd = test::to_double(x), dyd = test::to_double(dy), yr(n), dxr(n);
        ref::relu_forward(xd.data(), yr.data(), n);
        ref::relu_backward(xd.data(), dyd.data(), dxr.data(), n);
        EXPECT_TRUE(test::within_abs(y.data(), yr.data(), 0.0, n)) << "n = " << n;
        EXPECT_TRUE(test::within_abs(dx.data(), dxr.data(), 0.0, n)) << "n = " << n;
    }
}

TEST(ReluKernel, SpecialValues) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {-0.0f, 0.0f, -inf, inf, nan, 1e-45f, -1e-45f};
    std::vector<float> y(x.size());
    cpu::relu_forward(x.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[3], inf);
    EXPECT_TRUE(std::isnan(y[4]));
    EXPECT_EQ(y[5], 1e-45f);
    EXPECT_EQ(y[6], 0.0f);
}

TEST(ReluKernel, ThreadCountDoesNotMatter) {
    const int64_t n = 300001;
    std::vector<float> x = test::uniform_floats(n, -2.0f, 2.0f, test::test_seed());
    std::vector<float> y1(n), y4(n);
    omp_set_num_threads(1);
    cpu::relu_forward(x.data(), y1.data(), n);
    omp_set_num_threads(4);
    cpu::relu_forward(x.data(), y4.data(), n);
    omp_set_num_threads(omp_get_num_procs());
    EXPECT_TRUE(test::bitwise_equal(y1, y4));
}

}  // namespace
}  // namespace dt::kernels
