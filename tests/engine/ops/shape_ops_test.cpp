// SPDX-License-Identifier: MIT
// dt::flatten / dt::reshape: shapes, buffer sharing, -1 inference, backward reshaping dy to the
// input shape (directly and through the tape), and bad-input errors.
#include "engine/ops/shape_ops.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/autograd/tape.h"
#include "engine/ops/softmax_xent.h"
#include "tests/support/autograd_util.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

TEST(ShapeOps, FlattenSharesTheBufferAndReshapesGradients) {
    Tensor x =
        Tensor::from_vector({2, 3, 2, 2}, test::uniform_floats(24, -1, 1, test::test_seed()));
    x.set_requires_grad(true);
    Tensor y = flatten(x);
    EXPECT_EQ(y.shape(), (Shape{2, 12}));
    EXPECT_EQ(y.f32(), x.f32());
    EXPECT_TRUE(y.requires_grad());
    Tensor dy = Tensor::full({2, 12}, 0.5f);
    const std::vector<Tensor> g = test::backward_of(y, dy);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0].shape(), x.shape());
    EXPECT_EQ(g[0].to_vector(), dy.to_vector());
}

TEST(ShapeOps, ReshapeInfersMinusOne) {
    Tensor x = Tensor::from_vector({2, 6}, test::uniform_floats(12, -1, 1, test::test_seed()));
    EXPECT_EQ(reshape(x, {3, -1}).shape(), (Shape{3, 4}));
    EXPECT_EQ(reshape(x, {-1}).shape(), (Shape{12}));
    EXPECT_EQ(reshape(x, {1, 2, 2, 3}).to_vector(), x.to_vector());
    Tensor labels = Tensor::from_vector_i64({2, 1}, {0, 1});  // any dtype reshapes
    EXPECT_EQ(reshape(labels, {2}).shape(), (Shape{2}));
}

TEST(ShapeOps, GradientThroughTheTape) {
    Tensor x = Tensor::from_vector({2, 1, 1, 3}, {0.1f, 0.2f, 0.3f, 1.0f, -1.0f, 0.5f});
    x.set_requires_grad(true);
    Tensor labels = Tensor::from_vector_i64({2}, {2, 0});
    Tensor loss = softmax_cross_entropy(reshape(flatten(x), {2, 3}), labels);
    loss.backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().shape(), x.shape());
    // Same gradient as the loss applied to the (2, 3) logits directly.
    Tensor z = Tensor::from_vector({2, 3}, x.to_vector());
    z.set_requires_grad(true);
    softmax_cross_entropy(z, labels).backward();
    EXPECT_EQ(x.grad().to_vector(), z.grad().to_vector());
}

TEST(ShapeOps, NoGradRecordsNothing) {
    Tensor x = Tensor::full({2, 2, 2}, 1.0f);
    x.set_requires_grad(true);
    autograd::clear_tape();
    autograd::NoGradGuard guard;
    EXPECT_FALSE(flatten(x).requires_grad());
    EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(ShapeOps, BadInputsThrow) {
    Tensor x = Tensor::full({2, 6}, 1.0f);
    EXPECT_THROW(reshape(x, {5, 2}), ShapeError);
    EXPECT_THROW(reshape(x, {-1, -1}), ShapeError);
    EXPECT_THROW(reshape(x, {5, -1}), ShapeError);
    EXPECT_THROW(reshape(x, {-2, -6}), ShapeError);
    EXPECT_THROW(flatten(Tensor::full({4}, 1.0f)), ShapeError);
    EXPECT_THROW(flatten(Tensor()), Error);
}

}  // namespace
}  // namespace dt
