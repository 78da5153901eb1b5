// SPDX-License-Identifier: MIT
// dt::dropout through autograd: values x * float(1 / (1 - p)) or 0, backward through the saved
// mask, masks keyed by sample id (not batch row), identity in eval mode and for p == 0, and
// bad-input errors.
#include "engine/ops/dropout.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "engine/autograd/tape.h"
#include "kernels/ref/dropout_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

DropoutKey key_for(std::vector<int64_t> ids) {
    DropoutKey k;
    k.seed = 2024, k.epoch = 3, k.layer = 1, k.sample_ids = std::move(ids);
    return k;
}

Tensor input(int64_t N, uint32_t tag = 1) {
    Tensor x =
        Tensor::from_vector({N, 3, 5}, test::uniform_floats(N * 15, -2, 2, test::test_seed(), tag));
    x.set_requires_grad(true);
    return x;
}

TEST(DropoutOp, ForwardBackwardMatchReferenceMask) {
    Tensor x = input(4);
    const DropoutKey key = key_for({10, 3, 77, 5});
    Tensor y = dropout(x, 0.3f, true, key);
    kernels::DropoutParams p;
    p.N = 4, p.D = 15, p.p = 0.3f, p.seed = key.seed, p.sub = kernels::dropout_sub(3, 1);
    std::vector<double> xd = test::to_double(x.to_vector()), yd(60);
    std::vector<uint8_t> mask(60);
    kernels::ref::dropout_forward(xd.data(), key.sample_ids.data(), yd.data(), mask.data(), p);
    const float scale = 1.0f / (1.0f - 0.3f);
    const std::vector<float> xv = x.to_vector(), yv = y.to_vector();
    Tensor dy =
        Tensor::from_vector({4, 3, 5}, test::uniform_floats(60, -1, 1, test::test_seed(), 2));
    const std::vector<Tensor> g = test::backward_of(y, dy);
    const std::vector<float> dyv = dy.to_vector(), dxv = g[0].to_vector();
    for (int i = 0; i < 60; ++i) {
        EXPECT_EQ(test::bits(yv[i]), test::bits(mask[i] ? xv[i] * scale : 0.0f)) << i;
        EXPECT_EQ(test::bits(dxv[i]), test::bits(mask[i] ? dyv[i] * scale : 0.0f)) << i;
    }
}

TEST(DropoutOp, SameKeySameMaskAndIdNotRow) {
    Tensor ones = Tensor::full({3, 3, 5}, 1.0f);
    Tensor a = dropout(ones, 0.5f, true, key_for({8, 9, 10}));
    Tensor b = dropout(ones, 0.5f, true, key_for({8, 9, 10}));
    Tensor c = dropout(ones, 0.5f, true, key_for({10, 8, 9}));  // same samples, other rows
    EXPECT_TRUE(test::bitwise_equal(a.to_vector(), b.to_vector()));
    const std::vector<float> av = a.to_vector(), cv = c.to_vector();
    const int row_in_c[] = {1, 2, 0};
    for (int n = 0; n < 3; ++n)
        for (int j = 0; j < 15; ++j) EXPECT_EQ(av[n * 15 + j], cv[row_in_c[n] * 15 + j]);
    DropoutKey other = key_for({8, 9, 10});
    other.epoch = 4;
    EXPECT_NE(dropout(ones, 0.5f, true, other).to_vector(), av);
}

TEST(DropoutOp, EvalAndZeroPAreIdentityAndDifferentiable) {
    Tensor x = Tensor::from_vector({1}, {1.5f});
    x.set_requires_grad(true);
    for (auto [p, training] : {std::pair{0.4f, false}, std::pair{0.0f, true}}) {
        Tensor y = dropout(x, p, training, key_for({0}));
        EXPECT_EQ(y.item(), 1.5f);
        x.zero_grad();
        y.backward();
        ASSERT_TRUE(x.grad().defined());
        EXPECT_EQ(x.grad().item(), 1.0f);
    }
}

TEST(DropoutOp, GradientThroughTheTape) {
    Tensor x = Tensor::from_vector({1}, {2.0f});
    x.set_requires_grad(true);
    // Sample 0 of this key: find whether its single element is kept, then check the gradient.
    Tensor y = dropout(x, 0.5f, true, key_for({123}));
    const bool kept = y.item() != 0.0f;
    y.backward();
    EXPECT_EQ(x.grad().item(), kept ? 2.0f : 0.0f);
}

TEST(DropoutOp, BadInputsThrow) {
    Tensor x = input(2);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_THROW(dropout(x, 1.0f, true, key_for({0, 1})), ValueError);
    EXPECT_THROW(dropout(x, -0.1f, true, key_for({0, 1})), ValueError);
    EXPECT_THROW(dropout(x, nan, true, key_for({0, 1})), ValueError);
    EXPECT_THROW(dropout(x, 0.5f, true, key_for({0})), ShapeError);
    EXPECT_THROW(dropout(x, 0.5f, true, key_for({0, -1})), ValueError);
    EXPECT_THROW(dropout(x, 0.5f, true, key_for({0, int64_t{1} << 32})), ValueError);
    DropoutKey k = key_for({0, 1});
    k.epoch = 1 << 16;
    EXPECT_THROW(dropout(x, 0.5f, true, k), ValueError);
    EXPECT_THROW(dropout(Tensor::zeros({2, 2}, DType::kI64), 0.5f, true, key_for({0, 1})),
                 DTypeError);
    autograd::clear_tape();
}

}  // namespace
}  // namespace dt
