// SPDX-License-Identifier: MIT
// Double-precision gradient check of the reference batchnorm2d backward (kernels/ref) against
// central differences: dx, dgamma, dbeta in training mode (batch statistics depend on x) and in
// eval mode (fixed running statistics), on a small odd shape.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/batchnorm2d_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using VecD = std::vector<double>;

const BatchNorm2dParams kP{.N = 3, .C = 2, .HW = 5, .eps = 1e-5f};
constexpr int64_t kNumel = 3 * 2 * 5;

struct Setup {
    VecD x, gamma, beta, dy, rmean, rvar;
};

Setup setup() {
    Setup s;
    s.x = test::to_double(test::uniform_floats(kNumel, -2.0f, 2.0f, test::test_seed(), 1));
    s.gamma = test::to_double(test::uniform_floats(kP.C, 0.5f, 1.5f, test::test_seed(), 2));
    s.beta = test::to_double(test::uniform_floats(kP.C, -1.0f, 1.0f, test::test_seed(), 3));
    s.dy = test::to_double(test::uniform_floats(kNumel, -1.0f, 1.0f, test::test_seed(), 4));
    s.rmean = {0.3, -0.2};
    s.rvar = {0.8, 1.7};
    return s;
}

// y = BN(x; gamma, beta) with batch statistics (training) or the running ones (eval).
VecD forward(const VecD& x, const VecD& gamma, const VecD& beta, const Setup& s, bool training) {
    VecD mean(kP.C), var(kP.C), invstd(kP.C), y(kNumel);
    if (training) {
        ref::batchnorm2d_stats(x.data(), mean.data(), var.data(), invstd.data(), kP);
    } else {
        mean = s.rmean;
        ref::batchnorm2d_invstd(s.rvar.data(), invstd.data(), kP);
    }
    ref::batchnorm2d_apply(x.data(), mean.data(), invstd.data(), gamma.data(), beta.data(),
                           y.data(), kP);
    return y;
}

struct Grads {
    VecD dx, dgamma, dbeta;
};

Grads backward(const Setup& s, bool training) {
    VecD mean(kP.C), var(kP.C), invstd(kP.C);
    if (training) {
        ref::batchnorm2d_stats(s.x.data(), mean.data(), var.data(), invstd.data(), kP);
    } else {
        mean = s.rmean;
        ref::batchnorm2d_invstd(s.rvar.data(), invstd.data(), kP);
    }
    Grads g{VecD(kNumel), VecD(kP.C), VecD(kP.C)};
    ref::batchnorm2d_backward(s.dy.data(), s.x.data(), mean.data(), invstd.data(), s.gamma.data(),
                              g.dx.data(), g.dgamma.data(), g.dbeta.data(), training, kP);
    return g;
}

void check_all(bool training) {
    const Setup s = setup();
    const Grads g = backward(s, training);
    EXPECT_TRUE(test::gradcheck(
        [&](const VecD& x) { return forward(x, s.gamma, s.beta, s, training); }, s.x, s.dy, g.dx));
    EXPECT_TRUE(
        test::gradcheck([&](const VecD& gm) { return forward(s.x, gm, s.beta, s, training); },
                        s.gamma, s.dy, g.dgamma));
    EXPECT_TRUE(
        test::gradcheck([&](const VecD& b) { return forward(s.x, s.gamma, b, s, training); },
                        s.beta, s.dy, g.dbeta));
}

TEST(GradcheckBatchNorm2d, Training) { check_all(true); }
TEST(GradcheckBatchNorm2d, Eval) { check_all(false); }

}  // namespace
}  // namespace dt::kernels
