// SPDX-License-Identifier: MIT
// dt::bias_add through autograd: y = x + b[c] exactly; dx = dy; db equals the bias.grad kernel
// bit for bit and the double reference within (P + depth + 2) eps32 sum|dy|; bad shapes throw.
#include "engine/ops/bias_add.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "kernels/bias_add.h"
#include "kernels/ref/bias_add_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

TEST(BiasAddOp, ForwardBackwardOnRanks2To4) {
    for (const Shape& shape : {Shape{7, 3}, Shape{5, 4, 9}, Shape{3, 2, 5, 7}}) {
        SCOPED_TRACE(shape_str(shape));
        const int64_t n = shape[0], c = shape[1], numel = shape_numel(shape);
        Tensor x = Tensor::from_vector(shape, test::uniform_floats(numel, -1, 1, 21, 1));
        Tensor b = Tensor::from_vector({c}, test::uniform_floats(c, -1, 1, 21, 2));
        x.set_requires_grad(true);
        b.set_requires_grad(true);
        Tensor y = bias_add(x, b);
        const int64_t P = numel / (n * c);
        for (int64_t i = 0; i < numel; ++i)
            ASSERT_EQ(test::bits(y.f32()[i]), test::bits(x.f32()[i] + b.f32()[(i / P) % c]));
        const auto dyv = test::uniform_floats(numel, -1, 1, 21, 3);
        test::weighted_sum(y, dyv).backward();
        EXPECT_TRUE(test::bitwise_equal(x.grad().f32(), dyv.data(), numel));
        const kernels::BiasAddParams p{.n = n, .c = c, .p = P};
        std::vector<float> db(c);
        kernels::cpu::bias_add_backward(dyv.data(), db.data(), p);
        EXPECT_TRUE(test::bitwise_equal(b.grad().f32(), db.data(), c));
        std::vector<double> dyd = test::to_double(dyv), want(c), mag(c), bound(c);
        kernels::ref::bias_add_backward(dyd.data(), want.data(), p);
        for (auto& v : dyd) v = std::fabs(v);
        kernels::ref::bias_add_backward(dyd.data(), mag.data(), p);
        const double depth = std::ceil(std::log2(static_cast<double>(n)));
        for (int64_t i = 0; i < c; ++i) bound[i] = (P + depth + 2) * test::kEps32 * mag[i];
        EXPECT_TRUE(test::within_bound(b.grad().f32(), want.data(), bound.data(), c));
    }
}

TEST(BiasAddOp, RejectsBadArguments) {
    try {
        bias_add(Tensor::zeros({2, 3, 4}), Tensor::zeros({4}));
        FAIL() << "no exception";
    } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("b must have shape [3]"), std::string::npos) << msg;
    }
    EXPECT_THROW(bias_add(Tensor::zeros({5}), Tensor::zeros({5})), ShapeError);
    EXPECT_THROW(bias_add(Tensor::zeros({2, 3}), Tensor::zeros({3, 1})), ShapeError);
}

}  // namespace
}  // namespace dt
