// SPDX-License-Identifier: MIT
// dt::relu through autograd: forward values, gradient flow, dtype errors.
#include "engine/ops/relu.h"

#include <gtest/gtest.h>

#include "engine/autograd/tape.h"

namespace dt {
namespace {

TEST(ReluOp, ForwardAndBackward) {
    Tensor x = Tensor::from_vector({2, 3}, {-1.f, 2.f, 0.f, 3.f, -4.f, 5.f});
    x.set_requires_grad(true);
    Tensor y = relu(x);
    EXPECT_EQ(y.to_vector(), (std::vector<float>{0.f, 2.f, 0.f, 3.f, 0.f, 5.f}));
    // backward() needs a one-element loss: check the gradient on a one-element input.
    Tensor s = Tensor::from_vector({1}, {2.5f});
    s.set_requires_grad(true);
    Tensor r = relu(s);
    r.backward();
    ASSERT_TRUE(s.grad().defined());
    EXPECT_EQ(s.grad().item(), 1.0f);
}

TEST(ReluOp, RejectsIntegerInput) {
    Tensor x = Tensor::from_vector_i64({2}, {1, 2});
    EXPECT_THROW(relu(x), DTypeError);
}

TEST(ReluOp, NoGradGuardRecordsNothing) {
    Tensor x = Tensor::from_vector({1}, {1.f});
    x.set_requires_grad(true);
    autograd::clear_tape();
    {
        autograd::NoGradGuard guard;
        Tensor y = relu(x);
        EXPECT_FALSE(y.requires_grad());
    }
    EXPECT_EQ(autograd::tape_size(), 0u);
}

}  // namespace
}  // namespace dt
