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
#include "tests/support/rng.h"

namespace dt {
namespace {

std::vector<double> dbl(const Tensor& t) { return {t.f32(), t.f32() + t.numel()}; }
std::vector<double> absd(std::vector<double> v) {
    for (auto& x : v) x = std::fabs(x);
    return v;
}

void expect_bound(const Tensor& got, const std::vector<double>& want,
                  const std::vector<double>& mag, double c, const char* what) {
    std::vector<double> bound(mag);
    for (auto& v : bound) v *= c * test::kEps32;
    EXPECT_TRUE(test::within_bound(got.f32(), want.data(), bound.data(), got.numel())) << what;
}

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

        std::vector<float> yk(y.numel()), dx(x.numel()), dw(w.numel()), db(p.out);
        const kernels::BiasAddParams bp{.n = p.n, .c = p.out, .p = 1};
        kernels::cpu::linear_forward(x.f32(), w.f32(), b.f32(), yk.data(), p);
        kernels::cpu::linear_backward_data(dyv.data(), w.f32(), dx.data(), p);
        kernels::cpu::linear_backward_weight(x.f32(), dyv.data(), dw.data(), p);
        kernels::cpu::bias_add_backward(dyv.data(), db.data(), bp);
        EXPECT_TRUE(test::bitwise_equal(y.f32(), yk.data(), y.numel()));
        EXPECT_TRUE(test::bitwise_equal(x.grad().f32(), dx.data(), x.numel()));
        EXPECT_TRUE(test::bitwise_equal(w.grad().f32(), dw.data(), w.numel()));
        EXPECT_TRUE(test::bitwise_equal(b.grad().f32(), db.data(), p.out));

        const auto xd = dbl(x), wd = dbl(w), bd = dbl(b), dyd = test::to_double(dyv);
        const auto ax = absd(xd), aw = absd(wd), ab = absd(bd), ady = absd(dyd);
        std::vector<double> yr(y.numel()), ym(y.numel()), dxr(x.numel()), dxm(x.numel()),
            dwr(w.numel()), dwm(w.numel()), dbr(p.out), dbm(p.out);
        kernels::ref::linear_forward(xd.data(), wd.data(), bd.data(), yr.data(), p);
        kernels::ref::linear_forward(ax.data(), aw.data(), ab.data(), ym.data(), p);
        kernels::ref::linear_backward_data(dyd.data(), wd.data(), dxr.data(), p);
        kernels::ref::linear_backward_data(ady.data(), aw.data(), dxm.data(), p);
        kernels::ref::linear_backward_weight(xd.data(), dyd.data(), dwr.data(), p);
        kernels::ref::linear_backward_weight(ax.data(), ady.data(), dwm.data(), p);
        kernels::ref::bias_add_backward(dyd.data(), dbr.data(), bp);
        kernels::ref::bias_add_backward(ady.data(), dbm.data(), bp);
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        expect_bound(y, yr, ym, p.in + 2, "forward");
        expect_bound(x.grad(), dxr, dxm, p.out + 1, "dx");
        expect_bound(w.grad(), dwr, dwm, depth + 2, "dw");
        expect_bound(b.grad(), dbr, dbm, depth + 3, "db");
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
