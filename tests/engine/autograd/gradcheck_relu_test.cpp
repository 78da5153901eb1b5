// SPDX-License-Identifier: MIT
// Reference ReLU backward vs central differences (inputs kept away from the kink at 0).
#include <gtest/gtest.h>

#include "kernels/ref/relu_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace {

TEST(GradcheckRelu, ReferenceBackward) {
    std::vector<double> x = dt::test::to_double(dt::test::uniform_floats(37, -1, 1, 7));
    for (double& v : x) v += v < 0 ? -0.01 : 0.01;
    EXPECT_TRUE(
        dt::test::unary_gradcheck(dt::kernels::ref::relu_forward, dt::kernels::ref::relu_backward,
                                  x, dt::test::to_double(dt::test::uniform_floats(37, -1, 1, 8))));
}

}  // namespace
