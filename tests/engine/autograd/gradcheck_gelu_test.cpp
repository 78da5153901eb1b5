// SPDX-License-Identifier: MIT
// Reference GELU backward vs central differences of the reference forward.
#include <gtest/gtest.h>

#include "kernels/ref/gelu_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace {

TEST(GradcheckGelu, ReferenceBackward) {
    const int64_t n = 41;
    const std::vector<double> x = dt::test::to_double(dt::test::uniform_floats(n, -5, 5, 9));
    const std::vector<double> dy = dt::test::to_double(dt::test::uniform_floats(n, -1, 1, 10));
    std::vector<double> dx(n);
    dt::kernels::ref::gelu_backward(x.data(), dy.data(), dx.data(), n);
    auto f = [n](const std::vector<double>& in) {
        std::vector<double> y(n);
        dt::kernels::ref::gelu_forward(in.data(), y.data(), n);
        return y;
    };
    EXPECT_TRUE(dt::test::gradcheck(f, x, dy, dx));
}

}  // namespace
