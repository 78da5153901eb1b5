// SPDX-License-Identifier: MIT
// Adam / AdamW: a few steps against the formulas of adam.h in double (few ulp) and in float in
// the documented order (bitwise); the first-step size ~ lr; L2 vs decoupled weight decay;
// restoring the step count; state names; validation errors.
#include "engine/optim/adam.h"

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

OptimizerConfig adam(const char* kind = "adam", float wd = 0) {
    OptimizerConfig c;
    c.kind = kind;
    c.weight_decay = wd;
    return c;
}

// Per-parameter state of the references below.
template <typename T>
struct Ref {
    std::vector<T> p, m, v;
    int t = 0;
};

// adam.h evaluated in double throughout: the mathematical target.
void ref_double(Ref<double>& s, const std::vector<float>& grad, float lr,
                const OptimizerConfig& c) {
    const bool w = c.kind == "adamw";
    const double b1 = c.beta1, b2 = c.beta2, wd = c.weight_decay;
    ++s.t;
    const double c1 = 1 - std::pow(b1, s.t), c2 = 1 - std::pow(b2, s.t);
    for (std::size_t k = 0; k < s.p.size(); ++k) {
        double g = grad[k];
        if (w)
            s.p[k] *= 1 - lr * wd;
        else
            g += wd * s.p[k];
        s.m[k] = b1 * s.m[k] + (1 - b1) * g;
        s.v[k] = b2 * s.v[k] + (1 - b2) * g * g;
        s.p[k] -= lr / c1 * s.m[k] / (std::sqrt(s.v[k]) / std::sqrt(c2) + c.eps);
    }
}

// adam.h in float in the documented order: the bitwise specification.
void ref_float(Ref<float>& s, const std::vector<float>& grad, float lr, const OptimizerConfig& c) {
    const bool w = c.kind == "adamw";
    ++s.t;
    double b1t = 1, b2t = 1;
    for (int i = 0; i < s.t; ++i) {
        b1t *= c.beta1;
        b2t *= c.beta2;
    }
    const float neg_step = -static_cast<float>(lr / (1.0 - b1t));
    const float c2s = static_cast<float>(std::sqrt(1.0 - b2t));
    const float k1 = static_cast<float>(1.0 - c.beta1), k2 = static_cast<float>(1.0 - c.beta2);
    const float decay = static_cast<float>(1.0 - static_cast<double>(lr) * c.weight_decay);
    for (std::size_t k = 0; k < s.p.size(); ++k) {
        float g = grad[k];
        if (c.weight_decay != 0) {
            if (w)
                s.p[k] = s.p[k] * decay;
            else
                g = g + c.weight_decay * s.p[k];
        }
        s.m[k] = s.m[k] * c.beta1 + k1 * g;
        s.v[k] = s.v[k] * c.beta2 + (k2 * g) * g;
        const float denom = std::sqrt(s.v[k]) / c2s + c.eps;
        s.p[k] = s.p[k] + (neg_step * s.m[k]) / denom;
    }
}

void check_steps(const OptimizerConfig& cfg, int steps) {
    const std::vector<float> p0 = {0.5f, -1.25f, 2.0f, 0.75f, -0.3f};
    Tensor p = param(p0);
    auto opt = make_optimizer(cfg, {p});
    Ref<double> rd{{p0.begin(), p0.end()}, std::vector<double>(5), std::vector<double>(5)};
    Ref<float> rf{p0, std::vector<float>(5), std::vector<float>(5)};
    for (int s = 0; s < steps; ++s) {
        std::vector<float> g(5);
        for (int k = 0; k < 5; ++k) g[k] = 0.1f * static_cast<float>((s * 7 + k * 3) % 11 - 5);
        set_grad(p, g);
        const float lr = 1e-2f;
        opt->step(lr);
        ref_double(rd, g, lr, cfg);
        ref_float(rf, g, lr, cfg);
    }
    const std::vector<float> got = p.to_vector();
    for (std::size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(std::memcmp(&got[k], &rf.p[k], 4), 0)
            << "k " << k << ": " << got[k] << " vs " << rf.p[k];
        EXPECT_NEAR(got[k], rd.p[k], 4 * kEps32 * std::fabs(rd.p[k])) << "k " << k;
    }
    auto st = opt->state();
    ASSERT_EQ(st.size(), 4u);
    EXPECT_EQ(st[2].first, "param0.exp_avg");
    EXPECT_EQ(st[3].first, "param0.exp_avg_sq");
    for (std::size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(st[2].second.to_vector()[k], rf.m[k]);
        EXPECT_EQ(st[3].second.to_vector()[k], rf.v[k]);
    }
}

TEST(Adam, MatchesFormula) {
    check_steps(adam(), 1);
    check_steps(adam(), 5);
}

TEST(Adam, L2WeightDecay) { check_steps(adam("adam", 0.05f), 4); }

TEST(AdamW, DecoupledWeightDecay) { check_steps(adam("adamw", 0.05f), 4); }

TEST(Adam, FirstStepMovesByAboutLr) {
    // After bias correction m/sqrt(v) = sign(g) at t = 1, so |dp| = lr up to eps and rounding.
    Tensor p = param({1.0f, 1.0f, 1.0f});
    auto opt = make_optimizer(adam(), {p});
    set_grad(p, {3.0f, -0.01f, 250.0f});
    opt->step(0.001f);
    const std::vector<float> got = p.to_vector();
    EXPECT_NEAR(got[0], 0.999, 1e-6);
    EXPECT_NEAR(got[1], 1.001, 1e-6);
    EXPECT_NEAR(got[2], 0.999, 1e-6);
}

TEST(AdamW, DecayDoesNotGoThroughTheMoments) {
    // Zero gradient: AdamW only shrinks p (moments stay 0, the Adam step is 0/(0+eps) = 0);
    // Adam with L2 sees g = wd * p and moves p by about lr.
    Tensor a = param({2.0f}), b = param({2.0f});
    auto adamw = make_optimizer(adam("adamw", 0.1f), {a});
    auto adam_l2 = make_optimizer(adam("adam", 0.1f), {b});
    set_grad(a, {0.0f});
    set_grad(b, {0.0f});
    adamw->step(0.01f);
    adam_l2->step(0.01f);
    EXPECT_EQ(a.to_vector()[0], 2.0f * static_cast<float>(1.0 - 0.01f * 0.1f));
    EXPECT_EQ(adamw->state()[2].second.to_vector()[0], 0.0f);
    EXPECT_NEAR(b.to_vector()[0], 1.99, 1e-6);
}

TEST(Adam, RestoredStateContinuesBitwise) {
    Tensor a = param({0.3f, -0.7f}), b = param({0.3f, -0.7f});
    auto oa = make_optimizer(adam("adamw", 0.01f), {a});
    auto ob = make_optimizer(adam("adamw", 0.01f), {b});
    for (int s = 0; s < 6; ++s) {
        set_grad(a, {0.1f * s, -0.2f});
        oa->step(0.01f);
    }
    // Copy parameters and state into the fresh optimizer, as a checkpoint load would.
    b.copy_from(a);
    auto sa = oa->state(), sb = ob->state();
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t i = 0; i < sa.size(); ++i) sb[i].second.copy_from(sa[i].second);
    set_grad(a, {0.05f, 0.4f});
    set_grad(b, {0.05f, 0.4f});
    oa->step(0.01f);
    ob->step(0.01f);
    EXPECT_EQ(a.to_vector(), b.to_vector());
    EXPECT_EQ(ob->state()[0].second.data<int64_t>()[0], 7);
}

TEST(Adam, Validation) {
    Tensor p = param({1.0f});
    OptimizerConfig c = adam();
    c.beta1 = 1.0f;
    std::string m = message_of<ValueError>([&] { make_optimizer(c, {p}); });
    EXPECT_NE(m.find("adam: beta1 must be in [0, 1), got 1"), std::string::npos) << m;
    c = adam("adamw");
    c.beta2 = -0.1f;
    m = message_of<ValueError>([&] { make_optimizer(c, {p}); });
    EXPECT_NE(m.find("adamw: beta2 must be in [0, 1), got -0.1"), std::string::npos) << m;
    c = adam();
    c.eps = 0;
    m = message_of<ValueError>([&] { make_optimizer(c, {p}); });
    EXPECT_NE(m.find("eps must be"), std::string::npos) << m;
    m = message_of<ValueError>([&] { make_optimizer(adam("adamw", -0.01f), {p}); });
    EXPECT_NE(m.find("weight_decay must be"), std::string::npos) << m;
    EXPECT_THROW(make_optimizer(adam(), {Tensor::zeros({2}, DType::kI64)}), DTypeError);
}

}  // namespace
}  // namespace dt
