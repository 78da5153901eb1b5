// SPDX-License-Identifier: MIT
// dt::softmax_cross_entropy through autograd: loss and logits gradient (via loss.backward())
// against the double reference, a chain maxpool -> flatten -> loss against the kernels called by
// hand (bitwise), argmax_rows, and label/shape/dtype errors naming the offending values.
#include "engine/ops/softmax_xent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/ops/pool2d.h"
#include "engine/ops/shape_ops.h"
#include "kernels/pool2d.h"
#include "kernels/ref/softmax_xent_ref.h"
#include "kernels/softmax_xent.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

TEST(SoftmaxXentOp, LossAndGradientMatchReference) {
    const int64_t N = 9, K = 10;
    std::vector<int64_t> lab;
    for (int64_t n = 0; n < N; ++n) lab.push_back((n * 7) % K);
    Tensor logits =
        Tensor::from_vector({N, K}, test::uniform_floats(N * K, -4, 4, test::test_seed()));
    logits.set_requires_grad(true);
    Tensor loss = softmax_cross_entropy(logits, Tensor::from_vector_i64({N}, lab));
    EXPECT_EQ(loss.shape(), Shape{});
    loss.backward();
    const std::vector<double> ld = test::to_double(logits.to_vector());
    std::vector<double> m(N), s(N), rows(N), dl(N * K);
    double want = 0;
    const kernels::SoftmaxXentParams p{.N = N, .K = K};
    kernels::ref::softmax_xent_forward(ld.data(), lab.data(), m.data(), s.data(), rows.data(),
                                       &want, p);
    kernels::ref::softmax_xent_backward(ld.data(), lab.data(), m.data(), s.data(), 1.0, dl.data(),
                                        p);
    EXPECT_NEAR(loss.item(), want, 32 * test::kEps32 * want);
    EXPECT_TRUE(test::within_abs(logits.grad().f32(), dl.data(), 32 * test::kEps32 / N, N * K));
}

TEST(SoftmaxXentOp, ChainEqualsKernelsCalledByHand) {
    const int64_t N = 3, C = 2, H = 4, W = 4;
    const std::vector<float> xv = test::uniform_floats(N * C * H * W, -2, 2, test::test_seed(), 1);
    const std::vector<int64_t> lab = {7, 0, 3};
    Tensor x = Tensor::from_vector({N, C, H, W}, xv);
    x.set_requires_grad(true);
    softmax_cross_entropy(flatten(maxpool2d(x)), Tensor::from_vector_i64({N}, lab)).backward();

    kernels::Pool2dParams pp;
    pp.N = N, pp.C = C, pp.H = H, pp.W = W, pp.Ho = 2, pp.Wo = 2;
    std::vector<float> y(N * 8), m(N), s(N), rows(N), dl(N * 8), dx(xv.size());
    std::vector<int32_t> am(N * 8);
    float loss = 0;
    const kernels::SoftmaxXentParams sp{.N = N, .K = 8};
    kernels::cpu::maxpool2d_forward(xv.data(), y.data(), am.data(), pp);
    kernels::cpu::softmax_xent_forward(y.data(), lab.data(), m.data(), s.data(), rows.data(), &loss,
                                       sp);
    const float one = 1.0f;
    kernels::cpu::softmax_xent_backward(y.data(), lab.data(), m.data(), s.data(), &one, dl.data(),
                                        sp);
    kernels::cpu::maxpool2d_backward(dl.data(), am.data(), dx.data(), pp);
    EXPECT_TRUE(test::bitwise_equal(x.grad().to_vector(), dx));
}

TEST(SoftmaxXentOp, ArgmaxRows) {
    Tensor x = Tensor::from_vector({3, 3}, {0, 2, 2, -1, -3, -1, 0.5f, 0.25f, 0.75f});
    EXPECT_EQ(argmax_rows(x), (std::vector<int64_t>{1, 0, 2}));
    EXPECT_THROW(argmax_rows(Tensor::full({3}, 1.0f)), ShapeError);
}

TEST(SoftmaxXentOp, BadLabelsThrowWithTheOffendingValue) {
    Tensor logits = Tensor::full({3, 4}, 0.0f);
    try {
        softmax_cross_entropy(logits, Tensor::from_vector_i64({3}, {0, 3, 4}));
        FAIL() << "no error for label 4 of 4 classes";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("labels[2] = 4"), std::string::npos) << e.what();
    }
    EXPECT_THROW(softmax_cross_entropy(logits, Tensor::from_vector_i64({3}, {0, -1, 2})),
                 ValueError);
    EXPECT_THROW(softmax_cross_entropy(logits, Tensor::from_vector_i64({2}, {0, 1})), ShapeError);
    EXPECT_THROW(softmax_cross_entropy(logits, Tensor::from_vector({3}, {0, 1, 2})), DTypeError);
    EXPECT_THROW(
        softmax_cross_entropy(Tensor::full({12}, 0.0f), Tensor::from_vector_i64({3}, {0, 1, 2})),
        ShapeError);
    EXPECT_THROW(
        softmax_cross_entropy(Tensor::full({0, 4}, 0.0f), Tensor::from_vector_i64({0}, {})),
        ShapeError);
}

}  // namespace
}  // namespace dt
