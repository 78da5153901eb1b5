// SPDX-License-Identifier: MIT
// SGD: a few steps against the formulas of sgd.h evaluated in double (within a few ulp) and in
// float in the documented order (bitwise); weight decay, momentum (buf = g at the first update),
// Nesterov, skipped parameters, state names and validation errors.
#include "engine/optim/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "engine/optim/optimizer.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"

namespace dt {
namespace {

using test::kEps32, test::message_of, test::param, test::set_grad;

OptimizerConfig sgd(float momentum = 0, bool nesterov = false, float wd = 0) {
    OptimizerConfig c;
    c.kind = "sgd";
    c.momentum = momentum;
    c.nesterov = nesterov;
    c.weight_decay = wd;
    return c;
}

// The formulas of sgd.h, once in double (reference) and once in float (bitwise spec).
template <typename T>
void reference_step(std::vector<T>& p, std::vector<T>& buf, const std::vector<float>& grad, T lr,
                    T mom, T wd, bool nesterov, bool first) {
    for (std::size_t k = 0; k < p.size(); ++k) {
        T g = grad[k];
        if (wd != 0) g = g + wd * p[k];
        if (mom != 0) {
            buf[k] = first ? g : mom * buf[k] + g;
            g = nesterov ? g + mom * buf[k] : buf[k];
        }
        p[k] = p[k] - lr * g;
    }
}

// Runs 3 steps of cfg on fixed data and checks against both references.
void check_three_steps(const OptimizerConfig& cfg) {
    const std::vector<float> p0 = {0.5f, -1.25f, 2.0f, 0.75f};
    const std::vector<std::vector<float>> grads = {
        {0.1f, -0.2f, 0.3f, 0.05f}, {0.2f, 0.1f, -0.4f, 0.05f}, {-0.3f, 0.2f, 0.1f, 0.15f}};
    const float lr = 0.1f;
    Tensor p = param(p0);
    auto opt = make_optimizer(cfg, {p});
    std::vector<double> pd(p0.begin(), p0.end()), bd(4, 0.0);
    std::vector<float> pf = p0, bf(4, 0.0f);
    for (std::size_t s = 0; s < grads.size(); ++s) {
        set_grad(p, grads[s]);
        opt->step(lr);
        reference_step<double>(pd, bd, grads[s], lr, cfg.momentum, cfg.weight_decay, cfg.nesterov,
                               s == 0);
        reference_step<float>(pf, bf, grads[s], lr, cfg.momentum, cfg.weight_decay, cfg.nesterov,
                              s == 0);
    }
    const std::vector<float> got = p.to_vector();
    for (std::size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(std::memcmp(&got[k], &pf[k], 4), 0)
            << "k " << k << ": " << got[k] << " vs " << pf[k];
        EXPECT_NEAR(got[k], pd[k], 8 * kEps32 * std::fabs(pd[k])) << "k " << k;
    }
}

TEST(Sgd, PlainStepIsPMinusLrG) {
    Tensor p = param({1.0f, -2.0f});
    auto opt = make_optimizer(sgd(), {p});
    set_grad(p, {0.5f, 0.25f});
    opt->step(0.1f);
    EXPECT_EQ(p.to_vector(), (std::vector<float>{1.0f - 0.1f * 0.5f, -2.0f - 0.1f * 0.25f}));
    check_three_steps(sgd());
}

TEST(Sgd, WeightDecayIsAddedToTheGradient) { check_three_steps(sgd(0, false, 0.01f)); }

TEST(Sgd, MomentumBufferStartsAtTheGradient) {
    check_three_steps(sgd(0.9f));
    // Hand values: g = 1 each step, momentum 0.5, lr 1: buf 1, 1.5, 1.75 -> p 10-1-1.5-1.75.
    Tensor p = param({10.0f});
    auto opt = make_optimizer(sgd(0.5f), {p});
    for (int s = 0; s < 3; ++s) {
        set_grad(p, {1.0f});
        opt->step(1.0f);
    }
    EXPECT_EQ(p.to_vector()[0], 5.75f);
    auto st = opt->state();
    ASSERT_EQ(st.size(), 3u);
    EXPECT_EQ(st[0].first, "step");
    EXPECT_EQ(st[0].second.data<int64_t>()[0], 3);
    EXPECT_EQ(st[1].first, "param0.step");
    EXPECT_EQ(st[2].first, "param0.momentum_buffer");
    EXPECT_EQ(st[2].second.to_vector()[0], 1.75f);
}

TEST(Sgd, Nesterov) {
    check_three_steps(sgd(0.9f, true));
    check_three_steps(sgd(0.9f, true, 5e-4f));
    // Hand values: g = 1, momentum 0.5: step 1 buf 1, g' = 1.5; step 2 buf 1.5, g' = 1.75.
    Tensor p = param({0.0f});
    auto opt = make_optimizer(sgd(0.5f, true), {p});
    set_grad(p, {1.0f});
    opt->step(1.0f);
    EXPECT_EQ(p.to_vector()[0], -1.5f);
    opt->step(1.0f);
    EXPECT_EQ(p.to_vector()[0], -3.25f);
}

TEST(Sgd, ParametersWithoutGradientAreSkipped) {
    Tensor a = param({1.0f}), b = param({2.0f});
    auto opt = make_optimizer(sgd(0.5f), {a, b});
    set_grad(a, {1.0f});
    opt->step(1.0f);  // b has no gradient yet
    EXPECT_EQ(b.to_vector()[0], 2.0f);
    set_grad(b, {1.0f});
    opt->step(1.0f);  // b's first update: buf = g, not 0.5 * 0 + g with a stale flag
    EXPECT_EQ(b.to_vector()[0], 1.0f);
    EXPECT_EQ(a.to_vector()[0], 1.0f - 1.0f - 1.5f);
    auto st = opt->state();
    EXPECT_EQ(st[3].first, "param1.step");
    EXPECT_EQ(st[3].second.data<int64_t>()[0], 1);
    opt->zero_grad();
    EXPECT_FALSE(a.grad().defined());
    EXPECT_FALSE(b.grad().defined());
}

TEST(Sgd, GradientShapeMismatch) {
    Tensor p = param({1.0f, 2.0f});
    auto opt = make_optimizer(sgd(), {p});
    p.set_grad(Tensor::from_vector({1}, {1.0f}));
    EXPECT_THROW(opt->step(0.1f), ShapeError);
}

TEST(Optimizers, ABadGradientChangesNothing) {
    // Every gradient is checked before the step updates anything: the parameters before the bad
    // one keep their values and every counter stays, for SGD with momentum and for Adam.
    for (const OptimizerConfig& cfg : {sgd(0.9f), OptimizerConfig{}}) {
        Tensor a = param({1.0f, 2.0f}), b = param({3.0f});
        auto opt = make_optimizer(cfg, {a, b});
        a.set_grad(Tensor::from_vector({2}, {0.5f, 0.5f}));
        b.set_grad(Tensor::from_vector({2}, {1.0f, 1.0f}));  // b has one element
        EXPECT_THROW(opt->step(0.1f), ShapeError);
        EXPECT_EQ(a.to_vector(), (std::vector<float>{1.0f, 2.0f}));
        for (const auto& [name, t] : opt->state()) {
            if (t.dtype() == DType::kI64) {
                EXPECT_EQ(t.data<int64_t>()[0], 0) << name;
            }
        }
    }
}

TEST(Sgd, Validation) {
    Tensor p = param({1.0f});
    std::string m = message_of<ValueError>([&] { make_optimizer(sgd(-0.5f), {p}); });
    EXPECT_NE(m.find("momentum must be"), std::string::npos) << m;
    EXPECT_NE(m.find("-0.5"), std::string::npos) << m;
    m = message_of<ValueError>([&] { make_optimizer(sgd(0, false, -1e-4f), {p}); });
    EXPECT_NE(m.find("weight_decay"), std::string::npos) << m;
    m = message_of<ValueError>([&] { make_optimizer(sgd(0, true), {p}); });
    EXPECT_NE(m.find("nesterov needs momentum > 0"), std::string::npos) << m;
    m = message_of<ValueError>([&] { make_optimizer(sgd(NAN), {p}); });
    EXPECT_NE(m.find("momentum"), std::string::npos) << m;
    OptimizerConfig c;
    c.kind = "lamb";
    m = message_of<ValueError>([&] { make_optimizer(c, {p}); });
    EXPECT_NE(m.find("unknown optimizer 'lamb' (known: sgd, adam, adamw)"), std::string::npos);
}

}  // namespace
}  // namespace dt
