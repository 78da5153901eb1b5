// SPDX-License-Identifier: MIT
// Adam / AdamW update (formulas and their order in adam.h): per parameter, host scalars in double
// first, then one elementwise pass. Elements are independent, so the OpenMP split changes no bit.
#include "engine/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/target_clones.h"

namespace dt {

namespace {

struct AdamCoeffs {
    float b1, b2, k1, k2, c2s, eps, neg_step, wd, decay;
    bool decoupled;
};

/// The elementwise pass over [lo, hi). Every operation is one IEEE-754 float operation
/// (-ffp-contract=off, sqrt correctly rounded), so the vector clones give the scalar path's bits.
DT_TARGET_CLONES void adam_range(
    const AdamCoeffs& c, const float* __restrict grad, float* __restrict p, float* __restrict m,
    float* __restrict v, int64_t lo, int64_t hi) {
    const float b1 = c.b1, b2 = c.b2, k1 = c.k1, k2 = c.k2, c2s = c.c2s, eps = c.eps;
    const float neg_step = c.neg_step, wd = c.wd, decay = c.decay;
    const bool l2 = wd != 0.0f && !c.decoupled, decoupled = wd != 0.0f && c.decoupled;
    for (int64_t k = lo; k < hi; ++k) {
        float g = grad[k];
        float pk = p[k];
        if (decoupled) pk = pk * decay;  // ORDER: AdamW decay before the Adam step
        if (l2) g = g + wd * pk;         // ORDER: L2 term rounded, then added
        const float mk = m[k] * b1 + k1 * g;            // ORDER: (m*b1) + (k1*g)
        const float vk = v[k] * b2 + (k2 * g) * g;      // ORDER: (v*b2) + ((k2*g)*g)
        const float denom = std::sqrt(vk) / c2s + eps;  // ORDER: (sqrt(v)/c2s) + eps
        m[k] = mk;
        v[k] = vk;
        p[k] = pk + (neg_step * mk) / denom;  // ORDER: pk + ((-step_size*m)/denom)
    }
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const OptimizerConfig& cfg, bool decoupled)
    : Optimizer(std::move(params)),
      beta1_(cfg.beta1),
      beta2_(cfg.beta2),
      eps_(cfg.eps),
      weight_decay_(cfg.weight_decay),
      decoupled_(decoupled) {
    const char* who = decoupled ? "adamw" : "adam";
    optim_detail::check_params(params_, who);
    // Comparisons written so that NaN fails them.
    DT_CHECK_VALUE(beta1_ >= 0.0f && beta1_ < 1.0f, who, ": beta1 must be in [0, 1), got ", beta1_,
                   " (hint: 0.9 is usual)");
    DT_CHECK_VALUE(beta2_ >= 0.0f && beta2_ < 1.0f, who, ": beta2 must be in [0, 1), got ", beta2_,
                   " (hint: 0.999 is usual)");
    DT_CHECK_VALUE(std::isfinite(eps_) && eps_ > 0.0f, who, ": eps must be a finite value > 0,",
                   " got ", eps_, " (hint: 1e-8 is usual)");
    DT_CHECK_VALUE(std::isfinite(weight_decay_) && weight_decay_ >= 0.0f, who,
                   ": weight_decay must be a finite value >= 0, got ", weight_decay_,
                   decoupled ? " (hint: 0.01 is usual for adamw)" : " (hint: 0 disables it)");
    step_ = optim_detail::zero_counter();
    for (const Tensor& p : params_) {
        steps_.push_back(optim_detail::zero_counter());
        exp_avg_.push_back(Tensor::zeros(p.shape()));
        exp_avg_sq_.push_back(Tensor::zeros(p.shape()));
    }
    powers_.resize(params_.size());
}

void Adam::step(float lr) {
    const char* who = decoupled_ ? "adamw" : "adam";
    step_.data<int64_t>()[0] += 1;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor g_t = optim_detail::grad_of(params_[i], i, who);
        if (!g_t.defined()) continue;
        int64_t& t = steps_[i].data<int64_t>()[0];
        t += 1;

        // ORDER: b^t as a repeated product in double. One multiplication per step; a step count
        // restored from a checkpoint recomputes the product from 1, which gives the same bits.
        Powers& pw = powers_[i];
        if (pw.t + 1 != t) pw = Powers{};
        for (; pw.t < t; ++pw.t) {
            pw.b1t *= static_cast<double>(beta1_);
            pw.b2t *= static_cast<double>(beta2_);
        }
        const double c1 = 1.0 - pw.b1t, c2 = 1.0 - pw.b2t;
        const float neg_step = -static_cast<float>(static_cast<double>(lr) / c1);
        const float c2s = static_cast<float>(std::sqrt(c2));
        AdamCoeffs co;
        co.k1 = static_cast<float>(1.0 - static_cast<double>(beta1_));
        co.k2 = static_cast<float>(1.0 - static_cast<double>(beta2_));
        co.decay =
            static_cast<float>(1.0 - static_cast<double>(lr) * static_cast<double>(weight_decay_));
        co.b1 = beta1_, co.b2 = beta2_, co.eps = eps_, co.wd = weight_decay_;
        co.c2s = c2s, co.neg_step = neg_step, co.decoupled = decoupled_;
        const float* grad = g_t.f32();
        float* p = params_[i].f32();
        float* m = exp_avg_[i].f32();
        float* v = exp_avg_sq_[i].f32();
        const int64_t n = params_[i].numel();
        constexpr int64_t kBlock = 4096;  // elements per work item (whole vectors)
        const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
        for (int64_t bk = 0; bk < blocks; ++bk)
            adam_range(co, grad, p, m, v, bk * kBlock, std::min(n, (bk + 1) * kBlock));
    }
}

std::vector<std::pair<std::string, Tensor>> Adam::state() {
    std::vector<std::pair<std::string, Tensor>> out = {{"step", step_}};
    for (std::size_t i = 0; i < params_.size(); ++i) {
        out.emplace_back(str("param", i, ".step"), steps_[i]);
        out.emplace_back(str("param", i, ".exp_avg"), exp_avg_[i]);
        out.emplace_back(str("param", i, ".exp_avg_sq"), exp_avg_sq_[i]);
    }
    return out;
}

}  // namespace dt
