// SPDX-License-Identifier: MIT
// Double-precision gradient check of the reference layer_norm backward (kernels/ref) against
// central differences: dx (mean and rstd depend on x), dgamma and dbeta, on a small odd shape of
// two sequences; and on one feature, where y = beta whatever x and gamma are.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/layer_norm_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using VecD = std::vector<double>;

void check(const LayerNormParams& p) {
    const int64_t n = p.M * p.C;
    const VecD x = test::to_double(test::uniform_floats(n, -2.0f, 2.0f, test::test_seed(), 1)),
               gamma = test::to_double(test::uniform_floats(p.C, 0.5f, 1.5f, test::test_seed(), 2)),
               beta = test::to_double(test::uniform_floats(p.C, -1.0f, 1.0f, test::test_seed(), 3)),
               dy = test::to_double(test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 4));
    const auto forward = [&](const VecD& xi, const VecD& gi, const VecD& bi) {
        VecD y(n), mean(p.M), rstd(p.M);
        ref::layer_norm_forward(xi.data(), gi.data(), bi.data(), y.data(), mean.data(), rstd.data(),
                                p);
        return y;
    };
    VecD y(n), mean(p.M), rstd(p.M), dx(n), dgamma(p.C), dbeta(p.C);
    ref::layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                            p);
    ref::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(), dx.data(),
                             dgamma.data(), dbeta.data(), p);
    EXPECT_TRUE(test::gradcheck([&](const VecD& v) { return forward(v, gamma, beta); }, x, dy, dx))
        << "dx";
    EXPECT_TRUE(
        test::gradcheck([&](const VecD& v) { return forward(x, v, beta); }, gamma, dy, dgamma))
        << "dgamma";
    EXPECT_TRUE(
        test::gradcheck([&](const VecD& v) { return forward(x, gamma, v); }, beta, dy, dbeta))
        << "dbeta";
}

TEST(GradcheckLayerNorm, TwoSequencesOfOddRows) { check({.M = 6, .C = 5, .T = 3}); }
TEST(GradcheckLayerNorm, OneFeature) { check({.M = 4, .C = 1, .T = 2}); }

}  // namespace
}  // namespace dt::kernels
