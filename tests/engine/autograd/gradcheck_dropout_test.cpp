// SPDX-License-Identifier: MIT
// Double-precision gradient check of the reference dropout backward (kernels/ref) against central
// differences: with the key fixed the mask is fixed, so dropout is linear in x.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/dropout_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using VecD = std::vector<double>;

TEST(GradcheckDropout, Input) {
    DropoutParams p;
    p.N = 3, p.D = 7, p.p = 0.35f, p.seed = 77, p.sub = dropout_sub(2, 5);
    const std::vector<int64_t> ids = {4, 17, 2};
    const VecD x = test::to_double(test::uniform_floats(p.N * p.D, -2, 2, test::test_seed(), 1));
    const VecD dy = test::to_double(test::uniform_floats(p.N * p.D, -1, 1, test::test_seed(), 2));
    std::vector<uint8_t> mask(p.N * p.D);
    VecD y(p.N * p.D), dx(p.N * p.D);
    ref::dropout_forward(x.data(), ids.data(), y.data(), mask.data(), p);
    ref::dropout_backward(dy.data(), mask.data(), dx.data(), p);
    int kept = 0;
    for (uint8_t m : mask) kept += m;
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, p.N * p.D);
    auto f = [&](const VecD& xi) {
        VecD yi(p.N * p.D);
        std::vector<uint8_t> mi(p.N * p.D);
        ref::dropout_forward(xi.data(), ids.data(), yi.data(), mi.data(), p);
        return yi;
    };
    EXPECT_TRUE(test::gradcheck(f, x, dy, dx));
}

}  // namespace
}  // namespace dt::kernels
