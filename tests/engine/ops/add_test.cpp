// SPDX-License-Identifier: MIT
// dt::add through autograd: one add per element (bitwise), dy passed to both inputs, and errors.
#include "engine/ops/add.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/autograd/tape.h"
#include "kernels/ref/add_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

TEST(AddOp, ForwardIsOneAddPerElement) {
    const auto av = test::uniform_floats(70000, -1, 1, test::test_seed(), 1);  // parallel path
    const auto bv = test::uniform_floats(70000, -1e3f, 1e3f, test::test_seed(), 2);
    Tensor a = Tensor::from_vector({70000}, av), b = Tensor::from_vector({70000}, bv);
    const std::vector<float> y = add(a, b).to_vector();
    std::vector<double> ad = test::to_double(av), bd = test::to_double(bv), yd(70000);
    kernels::ref::add_forward(ad.data(), bd.data(), yd.data(), 70000);
    for (int i = 0; i < 70000; ++i) {
        ASSERT_EQ(test::bits(y[i]), test::bits(av[i] + bv[i])) << i;
        ASSERT_EQ(y[i], static_cast<float>(yd[i])) << i;  // a correctly rounded sum
    }
}

TEST(AddOp, BackwardPassesDyToBoth) {
    Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    Tensor b = Tensor::from_vector({2, 2}, {5, 6, 7, 8});
    a.set_requires_grad(true);
    Tensor y = add(a, b);  // b does not require a gradient
    EXPECT_TRUE(y.requires_grad());
    Tensor dy = Tensor::from_vector({2, 2}, {0.5f, -1, 2, 0});
    const std::vector<Tensor> g = test::backward_of(y, dy);
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].to_vector(), dy.to_vector());
    EXPECT_EQ(g[1].to_vector(), dy.to_vector());
}

TEST(AddOp, BadInputsThrow) {
    Tensor a = Tensor::full({2, 3}, 1.0f);
    EXPECT_THROW(add(a, Tensor::full({3, 2}, 1.0f)), ShapeError);
    EXPECT_THROW(add(a, Tensor::full({1, 3}, 1.0f)), ShapeError);
    EXPECT_THROW(add(a, Tensor::zeros({2, 3}, DType::kI64)), DTypeError);
    EXPECT_THROW(add(Tensor(), a), Error);
}

}  // namespace
}  // namespace dt
