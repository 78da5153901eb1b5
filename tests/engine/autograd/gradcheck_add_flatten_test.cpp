// SPDX-License-Identifier: MIT
// The two linear ops without a backward kernel of their own: the gradients the engine's backward
// rules produce (through the tape) must match central differences of the double reference
// forward (add: kernels/ref/add_ref.h; flatten: a copy that changes the shape only).
#include <gtest/gtest.h>

#include "engine/ops/add.h"
#include "engine/ops/shape_ops.h"
#include "kernels/ref/add_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/gradcheck.h"

namespace dt {
namespace {

std::vector<double> grad_of(const Tensor& t) {
    return std::vector<double>(t.grad().f32(), t.grad().f32() + t.numel());
}

TEST(GradcheckAdd, BothInputs) {
    const Shape s = {3, 5, 7};
    const int64_t n = shape_numel(s);
    Tensor a = test::random_param(s, 21, 1), b = test::random_param(s, 21, 2);
    const std::vector<float> dy = test::uniform_floats(n, -1, 1, 21, 3);
    test::weighted_sum(add(a, b), dy).backward();
    const std::vector<double> av = test::to_double(a.to_vector()), bv = test::to_double(b.to_vector());
    auto f_a = [&](const std::vector<double>& x) {
        std::vector<double> y(n);
        kernels::ref::add_forward(x.data(), bv.data(), y.data(), n);
        return y;
    };
    auto f_b = [&](const std::vector<double>& x) {
        std::vector<double> y(n);
        kernels::ref::add_forward(av.data(), x.data(), y.data(), n);
        return y;
    };
    EXPECT_TRUE(test::gradcheck(f_a, av, test::to_double(dy), grad_of(a)));
    EXPECT_TRUE(test::gradcheck(f_b, bv, test::to_double(dy), grad_of(b)));
}

TEST(GradcheckFlatten, Input) {
    const Shape s = {2, 3, 4, 5};
    const int64_t n = shape_numel(s);
    Tensor x = test::random_param(s, 22, 1);
    Tensor y = flatten(x);
    ASSERT_EQ(y.shape(), (Shape{2, 60}));
    const std::vector<float> dy = test::uniform_floats(n, -1, 1, 22, 2);
    test::weighted_sum(y, dy).backward();
    auto f = [](const std::vector<double>& v) { return v; };  // flatten moves no element
    EXPECT_TRUE(test::gradcheck(f, test::to_double(x.to_vector()), test::to_double(dy),
                                grad_of(x)));
}

}  // namespace
}  // namespace dt
