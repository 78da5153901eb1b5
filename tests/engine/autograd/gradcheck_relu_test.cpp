// SPDX-License-Identifier: MIT
// Reference ReLU backward vs central differences (inputs kept away from the kink at 0).
#include <gtest/gtest.h>

#include "kernels/ref/relu_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace {

TEST(GradcheckRelu, ReferenceBackward) {
    const int64_t n = 37;
    std::vector<double> x = dt::test::to_double(dt::test::uniform_floats(n, -1, 1, 7));
    for (double& v : x) v += v < 0 ? -0.01 : 0.01;
    std::vector<double> dy = dt::test::to_double(dt::test::uniform_floats(n, -1, 1, 8));
    std::vector<double> dx(n);
    dt::kernels::ref::relu_backward(x.data(), dy.data(), dx.data(), n);
    auto f = [n](const std::vector<double>& in) {
        std::vector<double> y(n);
        dt::kernels::ref::relu_forward(in.data(), y.data(), n);
        return y;
    };
    EXPECT_TRUE(dt::test::gradcheck(f, x, dy, dx));
}

}  // namespace
