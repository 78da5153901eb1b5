// SPDX-License-Identifier: MIT
// dt::maxpool2d / avgpool2d / global_avgpool through autograd: forward and backward against the
// double reference (max pool exactly; sums within (terms + 1) * eps32 * max|ref|), output shapes,
// gradient flow through the tape, and bad-input errors.
#include "engine/ops/pool2d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/relu.h"
#include "kernels/ref/pool2d_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using test::backward_of;
using VecD = std::vector<double>;

// A sum of `terms` terms: within (terms + 1) roundings of the largest reference magnitude.
::testing::AssertionResult close_to(const Tensor& got, const VecD& want, double terms) {
    return test::within_rel_of_max(got.f32(), want, (terms + 1) * test::kEps32);
}

kernels::Pool2dParams params_of(const Tensor& x, const Tensor& y, Pool2dOptions o) {
    kernels::Pool2dParams p;
    p.N = x.dim(0), p.C = x.dim(1), p.H = x.dim(2), p.W = x.dim(3);
    p.Ho = y.dim(2), p.Wo = y.dim(3), p.kernel = o.kernel, p.stride = o.stride,
    p.padding = o.padding;
    return p;
}

TEST(Pool2dOp, MaxAndAvgMatchReference) {
    for (Pool2dOptions o : {Pool2dOptions{}, Pool2dOptions{3, 2, 1}, Pool2dOptions{2, 1, 0}}) {
        SCOPED_TRACE("k=" + std::to_string(o.kernel) + " s=" + std::to_string(o.stride));
        Tensor x = Tensor::from_vector({2, 3, 7, 6},
                                       test::uniform_floats(252, -2, 2, test::test_seed(), 1));
        x.set_requires_grad(true);
        Tensor ym = maxpool2d(x, o), ya = avgpool2d(x, o);
        const kernels::Pool2dParams p = params_of(x, ym, o);
        EXPECT_EQ(ym.dim(2), kernels::pool2d_out_size(7, o.kernel, o.stride, o.padding));
        EXPECT_EQ(ya.shape(), ym.shape());
        Tensor dy = Tensor::from_vector(
            ym.shape(), test::uniform_floats(ym.numel(), -1, 1, test::test_seed(), 2));
        const VecD xd = test::to_double(x.to_vector()), dyd = test::to_double(dy.to_vector());
        VecD y1(ym.numel()), y2(ym.numel()), dx1(x.numel()), dx2(x.numel());
        std::vector<int32_t> am(ym.numel());
        kernels::ref::maxpool2d_forward(xd.data(), y1.data(), am.data(), p);
        kernels::ref::maxpool2d_backward(dyd.data(), am.data(), dx1.data(), p);
        kernels::ref::avgpool2d_forward(xd.data(), y2.data(), p);
        kernels::ref::avgpool2d_backward(dyd.data(), dx2.data(), p);
        const double terms = o.kernel * o.kernel;
        EXPECT_TRUE(close_to(ym, y1, 0));
        EXPECT_TRUE(close_to(ya, y2, terms));
        EXPECT_TRUE(close_to(backward_of(ym, dy)[0], dx1, terms));
        Tensor ya2 = avgpool2d(x, o);
        EXPECT_TRUE(close_to(backward_of(ya2, dy)[0], dx2, terms + 1));
    }
}

TEST(Pool2dOp, GlobalAvgMatchesReference) {
    Tensor x =
        Tensor::from_vector({3, 4, 5, 5}, test::uniform_floats(300, -2, 2, test::test_seed(), 3));
    x.set_requires_grad(true);
    Tensor y = global_avgpool(x);
    ASSERT_EQ(y.shape(), (Shape{3, 4}));
    Tensor dy = Tensor::from_vector({3, 4}, test::uniform_floats(12, -1, 1, test::test_seed(), 4));
    const VecD xd = test::to_double(x.to_vector()), dyd = test::to_double(dy.to_vector());
    VecD yd(12), dxd(300);
    kernels::ref::global_avgpool_forward(xd.data(), yd.data(), 12, 25);
    kernels::ref::global_avgpool_backward(dyd.data(), dxd.data(), 12, 25);
    EXPECT_TRUE(close_to(y, yd, 25));
    Tensor dx = backward_of(y, dy)[0];
    EXPECT_EQ(dx.shape(), x.shape());
    EXPECT_TRUE(close_to(dx, dxd, 1));
}

TEST(Pool2dOp, GradientFlowsThroughTheTape) {
    // One-element output: the single window's maximum gets the whole gradient.
    Tensor x = Tensor::from_vector({1, 1, 2, 2}, {0.5f, 3.0f, 3.0f, -1.0f});
    x.set_requires_grad(true);
    maxpool2d(x).backward();
    EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 1, 0, 0}));  // first maximum wins
    Tensor z = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
    z.set_requires_grad(true);
    avgpool2d(z).backward();
    EXPECT_EQ(z.grad().to_vector(), (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}));
}

/// (y, dx) of `f` on x with upstream gradient dy, under `spec` at every reduce site.
std::pair<std::vector<float>, std::vector<float>> forward_backward(
    const std::vector<float>& xv, const Shape& shape, const std::vector<float>& dyv,
    const std::function<Tensor(const Tensor&)>& f, AccumSpec spec) {
    const ScopedReduceConfig config(spec);
    Tensor x = Tensor::from_vector(shape, xv);
    x.set_requires_grad(true);
    Tensor y = f(x);
    test::weighted_sum(y, dyv).backward();
    return {y.to_vector(), x.grad().to_vector()};
}

TEST(Pool2dOp, FusedReluMaxpoolEqualsReluThenMaxpoolBitwise) {
    // Random signs, exact ties, zeros of both signs, a NaN; 2x2/2 and overlapping 3x3/2 windows
    // with padding; every deterministic pool.backward mode (permuted: same key both ways).
    for (const Pool2dOptions o :
         {Pool2dOptions{2, 2, 0}, Pool2dOptions{3, 2, 1}, Pool2dOptions{3, 1, 1}}) {
        const Shape shape{3, 2, 7, 8};
        std::vector<float> xv = test::uniform_floats(3 * 2 * 7 * 8, -1, 1, test::test_seed(), 1);
        for (std::size_t i = 0; i < xv.size(); i += 7) xv[i] = 0.0f;
        for (std::size_t i = 3; i < xv.size(); i += 11) xv[i] = -0.0f;
        for (std::size_t i = 5; i < xv.size(); i += 13) xv[i] = xv[i - 1];
        xv[17] = std::nanf("");
        const Tensor probe = maxpool2d(Tensor::from_vector(shape, xv), o);
        const std::vector<float> dyv = test::uniform_floats(probe.numel(), -1, 1, 99, 2);
        for (AccumMode m :
             {AccumMode::kTree, AccumMode::kKahan, AccumMode::kExact, AccumMode::kPermuted}) {
            const AccumSpec spec{m, 1234};
            const auto fused = forward_backward(
                xv, shape, dyv, [o](const Tensor& x) { return relu_maxpool2d(x, o); }, spec);
            const auto plain = forward_backward(
                xv, shape, dyv, [o](const Tensor& x) { return maxpool2d(relu(x), o); }, spec);
            EXPECT_TRUE(test::bitwise_equal(fused.first, plain.first))
                << "forward, kernel " << o.kernel << " stride " << o.stride;
            EXPECT_TRUE(test::bitwise_equal(fused.second, plain.second))
                << "backward, mode " << static_cast<int>(m) << ", kernel " << o.kernel;
        }
    }
}

TEST(Pool2dOp, BadInputsThrow) {
    Tensor x = Tensor::full({1, 1, 4, 4}, 1.0f);
    EXPECT_THROW(maxpool2d(x, {3, 1, 2}), ValueError);  // padding > kernel / 2
    EXPECT_THROW(avgpool2d(x, {0, 1, 0}), ValueError);
    EXPECT_THROW(maxpool2d(x, {2, 0, 0}), ValueError);
    EXPECT_THROW(maxpool2d(x, {5, 1, 0}), ShapeError);  // window larger than the map
    EXPECT_THROW(maxpool2d(Tensor::full({4, 4}, 1.0f)), ShapeError);
    EXPECT_THROW(global_avgpool(Tensor::full({1, 4, 4}, 1.0f)), ShapeError);
    EXPECT_THROW(global_avgpool(Tensor::zeros({1, 1, 2, 2}, DType::kI32)), DTypeError);
}

}  // namespace
}  // namespace dt
