// SPDX-License-Identifier: MIT
// dt::conv2d through autograd: forward and all three gradients equal the CPU kernels bit for bit
// and the double reference within the derived bounds of tests/kernels/cpu/conv2d_test.cpp; only
// requested gradients are computed; bad arguments throw with the shapes in the message.
#include "engine/ops/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "kernels/bias_add.h"
#include "kernels/conv2d.h"
#include "kernels/ref/bias_add_ref.h"
#include "kernels/ref/conv2d_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"
#include "tests/support/layer_kernels.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

struct Case {
    Shape x, w;
    Conv2dOptions opt;
    bool bias;
};

TEST(Conv2dOp, ForwardBackwardMatchKernelsAndReference) {
    const Case cases[] = {{{3, 2, 7, 6}, {4, 2, 3, 3}, {1, 1}, true},
                          {{2, 3, 9, 9}, {2, 3, 3, 3}, {2, 0}, false},
                          {{2, 2, 5, 5}, {3, 2, 1, 1}, {1, 0}, true},
                          {{1, 2, 9, 8}, {2, 2, 7, 7}, {2, 3}, true}};
    for (const Case& cs : cases) {
        SCOPED_TRACE(shape_str(cs.x) + " * " + shape_str(cs.w));
        const uint64_t seed = test::test_seed();
        Tensor x = test::random_param(cs.x, seed, 1), w = test::random_param(cs.w, seed, 2);
        Tensor b = cs.bias ? test::random_param({cs.w[0]}, seed, 3) : Tensor();
        Tensor y = conv2d(x, w, b, cs.opt);
        const auto dyv = test::uniform_floats(y.numel(), -1, 1, seed, 4);
        test::weighted_sum(y, dyv).backward();
        ASSERT_TRUE(x.grad().defined() && w.grad().defined());
        ASSERT_EQ(cs.bias, b.defined() && b.grad().defined());

        // The same kernels called directly (no bias: +0, which changes no sum), and the double
        // reference within bound.
        const kernels::Conv2dParams p{.n = cs.x[0],
                                      .ci = cs.x[1],
                                      .h = cs.x[2],
                                      .w = cs.x[3],
                                      .co = cs.w[0],
                                      .kh = cs.w[2],
                                      .kw = cs.w[3],
                                      .stride = cs.opt.stride,
                                      .pad = cs.opt.padding,
                                      .ho = y.dim(2),
                                      .wo = y.dim(3)};
        const test::LayerData d{x.to_vector(), w.to_vector(),
                                cs.bias ? b.to_vector() : std::vector<float>(p.co, 0.0f), dyv};
        const test::LayerOutputs<float> got{y.to_vector(), x.grad().to_vector(),
                                            w.grad().to_vector()};
        test::expect_same_bits(got, test::kConv2d.cpu.run(d, p));
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        test::expect_within_reference_bounds(got, d, test::kConv2d.ref, p,
                                             {.y = static_cast<double>(p.ci * p.kh * p.kw + 2),
                                              .dx = static_cast<double>(p.co + p.kh * p.kw + 1),
                                              .dw = p.ho * p.wo + depth + 2});
        if (cs.bias) {
            test::expect_bias_grad(b.grad().to_vector(), dyv,
                                   {.n = p.n, .c = p.co, .p = p.ho * p.wo},
                                   p.ho * p.wo + depth + 2);
        }
    }
}

TEST(Conv2dOp, ComputesOnlyRequestedGradients) {
    Tensor x = Tensor::from_vector({2, 1, 4, 4}, test::uniform_floats(32, -1, 1, 5));
    Tensor w = test::random_param({2, 1, 3, 3}, 6, 1);
    Tensor b = Tensor::from_vector({2}, {0.5f, -0.5f});
    Tensor y = conv2d(x, w, b, {1, 1});
    test::weighted_sum(y, std::vector<float>(y.numel(), 1.0f)).backward();
    EXPECT_FALSE(x.grad().defined());
    EXPECT_FALSE(b.grad().defined());
    EXPECT_TRUE(w.grad().defined());
    autograd::NoGradGuard guard;
    EXPECT_FALSE(conv2d(x, w, b).requires_grad());
    EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(Conv2dOp, RejectsBadArguments) {
    Tensor x = Tensor::zeros({2, 3, 5, 5}), w = Tensor::zeros({4, 2, 3, 3});
    std::string msg = test::message_of<ShapeError>([&] { conv2d(x, w, Tensor()); });
    EXPECT_NE(msg.find("[2, 3, 5, 5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 2, 3, 3]"), std::string::npos) << msg;
    Tensor w3 = Tensor::zeros({4, 3, 3, 3});
    msg = test::message_of<ShapeError>([&] { conv2d(x, w3, Tensor::zeros({5})); });
    EXPECT_NE(msg.find("b must have shape [4]"), std::string::npos) << msg;
    msg = test::message_of<ValueError>([&] { conv2d(x, w3, Tensor(), {0, 0}); });
    EXPECT_NE(msg.find("stride must be >= 1, got 0"), std::string::npos) << msg;
    msg = test::message_of<ValueError>([&] { conv2d(x, w3, Tensor(), {1, -1}); });
    EXPECT_NE(msg.find("padding must be >= 0"), std::string::npos) << msg;
    msg = test::message_of<ShapeError>([&] { conv2d(x, Tensor::zeros({4, 3, 7, 7}), Tensor()); });
    EXPECT_NE(msg.find("larger than the padded input"), std::string::npos) << msg;
    msg = test::message_of<ShapeError>([&] { conv2d(Tensor::zeros({3, 5, 5}), w3, Tensor()); });
    EXPECT_NE(msg.find("4 dimensions"), std::string::npos) << msg;
}

}  // namespace
}  // namespace dt
