// SPDX-License-Identifier: MIT
// dt::batchnorm2d through autograd: training and eval forward/backward against the double
// reference (within 1e-5 of the largest reference magnitude), running-statistics updates,
// saved state that later running updates cannot change, and bad-input errors.
#include "engine/ops/batchnorm2d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/autograd/tape.h"
#include "kernels/ref/batchnorm2d_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using test::backward_of;
using VecD = std::vector<double>;

::testing::AssertionResult close_to(const Tensor& got, const VecD& want) {
    return test::within_rel_of_max(got.f32(), want, 1e-5);
}

struct Fixture {
    Tensor x, gamma, beta, rmean, rvar, dy;
    kernels::BatchNorm2dParams p;
};

Fixture make(int64_t N, int64_t C, int64_t H, int64_t W) {
    Fixture f;
    const uint64_t s = test::test_seed();
    f.x = Tensor::from_vector({N, C, H, W}, test::uniform_floats(N * C * H * W, -2, 3, s, 1));
    f.gamma = Tensor::from_vector({C}, test::uniform_floats(C, 0.5f, 1.5f, s, 2));
    f.beta = Tensor::from_vector({C}, test::uniform_floats(C, -1, 1, s, 3));
    f.rmean = Tensor::from_vector({C}, test::uniform_floats(C, -0.5f, 0.5f, s, 4));
    f.rvar = Tensor::from_vector({C}, test::uniform_floats(C, 0.5f, 2.0f, s, 5));
    f.dy = Tensor::from_vector({N, C, H, W}, test::uniform_floats(N * C * H * W, -1, 1, s, 6));
    f.x.set_requires_grad(true);
    f.gamma.set_requires_grad(true);
    f.beta.set_requires_grad(true);
    f.p.N = N, f.p.C = C, f.p.HW = H * W;
    return f;
}

VecD d(const Tensor& t) { return test::to_double(t.to_vector()); }

void check(bool training) {
    Fixture f = make(4, 3, 5, 3);
    const int64_t C = 3, n = f.x.numel();
    const VecD x = d(f.x), g = d(f.gamma), b = d(f.beta), dy = d(f.dy);
    VecD rm = d(f.rmean), rv = d(f.rvar), mean(C), var(C), is(C), y(n), dx(n), dg(C), db(C);
    if (training) {
        kernels::ref::batchnorm2d_stats(x.data(), mean.data(), var.data(), is.data(), f.p);
    } else {
        mean = rm;
        kernels::ref::batchnorm2d_invstd(rv.data(), is.data(), f.p);
    }
    kernels::ref::batchnorm2d_apply(x.data(), mean.data(), is.data(), g.data(), b.data(), y.data(),
                                    f.p);
    kernels::ref::batchnorm2d_backward(dy.data(), x.data(), mean.data(), is.data(), g.data(),
                                       dx.data(), dg.data(), db.data(), training, f.p);
    if (training) {
        kernels::ref::batchnorm2d_update_running(rm.data(), rv.data(), mean.data(), var.data(), 0.1,
                                                 f.p);
    }
    BatchNormOptions opt;
    opt.training = training;
    Tensor out = batchnorm2d(f.x, f.gamma, f.beta, f.rmean, f.rvar, opt);
    EXPECT_TRUE(close_to(out, y));
    EXPECT_TRUE(close_to(f.rmean, rm));
    EXPECT_TRUE(close_to(f.rvar, rv));
    std::vector<Tensor> grads = backward_of(out, f.dy);
    ASSERT_EQ(grads.size(), 3u);
    EXPECT_TRUE(close_to(grads[0], dx));
    EXPECT_TRUE(close_to(grads[1], dg));
    EXPECT_TRUE(close_to(grads[2], db));
}

TEST(BatchNorm2dOp, TrainingForwardBackwardAndRunningUpdate) { check(true); }
TEST(BatchNorm2dOp, EvalUsesRunningStatsAndLeavesThemAlone) { check(false); }

TEST(BatchNorm2dOp, RunningStatsUpdateWithoutGradToo) {
    Fixture f = make(2, 2, 3, 3);
    const std::vector<float> before = f.rmean.to_vector();
    autograd::NoGradGuard guard;
    Tensor y = batchnorm2d(f.x, f.gamma, f.beta, f.rmean, f.rvar, {});
    EXPECT_FALSE(y.requires_grad());
    EXPECT_NE(f.rmean.to_vector(), before);
}

TEST(BatchNorm2dOp, EvalBackwardIgnoresLaterRunningUpdates) {
    Fixture f = make(2, 2, 3, 3);
    BatchNormOptions eval;
    eval.training = false;
    Tensor y = batchnorm2d(f.x, f.gamma, f.beta, f.rmean, f.rvar, eval);
    std::vector<Tensor> want = y.impl().grad_fn->backward(f.dy);
    {
        autograd::NoGradGuard guard;  // a training step in between moves the running mean
        batchnorm2d(f.x, f.gamma, f.beta, f.rmean, f.rvar, {});
    }
    std::vector<Tensor> got = backward_of(y, f.dy);
    for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(test::bitwise_equal(got[i].to_vector(), want[i].to_vector()));
}

TEST(BatchNorm2dOp, BadInputsThrow) {
    Fixture f = make(2, 3, 2, 2);
    Tensor g2 = Tensor::full({2}, 1.0f);
    EXPECT_THROW(batchnorm2d(f.x, g2, f.beta, f.rmean, f.rvar, {}), ShapeError);
    EXPECT_THROW(batchnorm2d(f.x, f.gamma, f.beta, f.rmean, g2, {}), ShapeError);
    Tensor x3 = Tensor::full({2, 3, 4}, 1.0f);
    EXPECT_THROW(batchnorm2d(x3, f.gamma, f.beta, f.rmean, f.rvar, {}), ShapeError);
    Tensor xi = Tensor::zeros({2, 3, 2, 2}, DType::kI64);
    EXPECT_THROW(batchnorm2d(xi, f.gamma, f.beta, f.rmean, f.rvar, {}), DTypeError);
    Tensor one = Tensor::full({1, 3, 1, 1}, 1.0f);
    EXPECT_THROW(batchnorm2d(one, f.gamma, f.beta, f.rmean, f.rvar, {}), ValueError);
    BatchNormOptions eval;
    eval.training = false;
    EXPECT_NO_THROW(batchnorm2d(one, f.gamma, f.beta, f.rmean, f.rvar, eval));
    BatchNormOptions bad;
    bad.momentum = 1.5f;
    EXPECT_THROW(batchnorm2d(f.x, f.gamma, f.beta, f.rmean, f.rvar, bad), ValueError);
    bad.momentum = 0.1f;
    bad.eps = -1.0f;
    EXPECT_THROW(batchnorm2d(f.x, f.gamma, f.beta, f.rmean, f.rvar, bad), ValueError);
    try {
        batchnorm2d(f.x, g2, f.beta, f.rmean, f.rvar, {});
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("gamma has 2 entries but x has 3 channels"),
                  std::string::npos)
            << e.what();
    }
    autograd::clear_tape();
}

}  // namespace
}  // namespace dt
