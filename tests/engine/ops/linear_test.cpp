// SPDX-License-Identifier: MIT
// dt::linear through autograd: forward and all three gradients equal the CPU kernels bit for bit
// and the double reference within derived bounds; only requested gradients are computed; bad
// shapes throw with the shapes in the message.
#include "engine/ops/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "kernels/bias_add.h"
#include "kernels/linear.h"
#include "kernels/ref/bias_add_ref.h"
#include "kernels/ref/linear_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"
#include "tests/support/layer_kernels.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

TEST(LinearOp, ForwardBackwardMatchKernelsAndReference) {
    const int64_t shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {33, 65, 10}, {128, 200, 17}};
    for (const auto& s : shapes) {
        const kernels::LinearParams p{.n = s[0], .in = s[1], .out = s[2]};
        SCOPED_TRACE("n=" + std::to_string(p.n) + " in=" + std::to_string(p.in) +
                     " out=" + std::to_string(p.out));
        const uint64_t seed = test::test_seed();
        Tensor x = test::random_param({p.n, p.in}, seed, 1);
        Tensor w = test::random_param({p.out, p.in}, seed, 2);
        Tensor b = test::random_param({p.out}, seed, 3);
        Tensor y = linear(x, w, b);
        ASSERT_EQ(y.shape(), (Shape{p.n, p.out}));
        const auto dyv = test::uniform_floats(y.numel(), -1, 1, seed, 4);
        test::weighted_sum(y, dyv).backward();

        // The same kernels called directly, and the double reference within bound.
        const test::LayerData d{x.to_vector(), w.to_vector(), b.to_vector(), dyv};
        const test::LayerOutputs<float> got{y.to_vector(), x.grad().to_vector(),
                                            w.grad().to_vector()};
        test::expect_same_bits(got, test::kLinear.cpu.run(d, p));
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        test::expect_within_reference_bounds(got, d, test::kLinear.ref, p,
                                             {.y = static_cast<double>(p.in + 2),
                                              .dx = static_cast<double>(p.out + 1),
                                              .dw = depth + 2});
        test::expect_bias_grad(b.grad().to_vector(), dyv, {.n = p.n, .c = p.out, .p = 1},
                               depth + 3);
    }
}

TEST(LinearOp, WithoutBiasAndOnlyRequestedGradients) {
    Tensor x = test::random_param({4, 6}, 11, 1);
    Tensor w = Tensor::from_vector({3, 6}, test::uniform_floats(18, -1, 1, 11, 2));
    Tensor y = linear(x, w, Tensor());
    test::weighted_sum(y, std::vector<float>(12, 1.0f)).backward();
    EXPECT_TRUE(x.grad().defined());
    EXPECT_FALSE(w.grad().defined());
}

TEST(LinearOp, BackwardWithoutATapeGivesTheTapesGradients) {
    Tensor x = test::random_param({9, 6}, 12, 1), w = test::random_param({4, 6}, 12, 2);
    Tensor b = test::random_param({4}, 12, 3);
    const auto dyv = test::uniform_floats(36, -1, 1, 12, 4);
    test::weighted_sum(linear(x, w, b), dyv).backward();
    const std::vector<Tensor> g = linear_backward(x, w, b, Tensor::from_vector({9, 4}, dyv));
    EXPECT_EQ(g[0].to_vector(), x.grad().to_vector());
    EXPECT_EQ(g[1].to_vector(), w.grad().to_vector());
    EXPECT_EQ(g[2].to_vector(), b.grad().to_vector());
    const std::string msg = test::message_of<ShapeError>(
        [&] { linear_backward(x, w, b, Tensor::zeros({9, 5})); });
    EXPECT_NE(msg.find("dy is [9, 5] but the output is [9, 4]"), std::string::npos) << msg;
}

TEST(LinearOp, RejectsBadArguments) {
    Tensor x = Tensor::zeros({8, 5}), w = Tensor::zeros({3, 4});
    std::string msg = test::message_of<ShapeError>([&] { linear(x, w, Tensor()); });
    EXPECT_NE(msg.find("[8, 5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
    msg = test::message_of<ShapeError>([&] {
        linear(x, Tensor::zeros({3, 5}), Tensor::zeros({4}));
    });
    EXPECT_NE(msg.find("b must have shape [3]"), std::string::npos) << msg;
    msg = test::message_of<ShapeError>([&] { linear(Tensor::zeros({8, 5, 1}), w, Tensor()); });
    EXPECT_NE(msg.find("2 dimensions"), std::string::npos) << msg;
}

}  // namespace
}  // namespace dt
