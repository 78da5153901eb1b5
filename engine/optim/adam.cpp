// SPDX-License-Identifier: MIT
// Adam / AdamW (formulas and their order in adam.h): per parameter, the step's scalars in double
// on the host, then one elementwise pass, the update kernel of kernels/adam.h through the kernel
// table of the parameters' device, all parameters in one call (one launch per 16 on a GPU).
#include "engine/optim/adam.h"

#include <cmath>

#include "engine/core/backend.h"

namespace dt {

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
        exp_avg_.push_back(Tensor::zeros(p.shape(), DType::kF32, p.device()));
        exp_avg_sq_.push_back(Tensor::zeros(p.shape(), DType::kF32, p.device()));
    }
    powers_.resize(params_.size());
}

void Adam::step(float lr) {
    const char* who = decoupled_ ? "adamw" : "adam";
    const std::vector<Tensor> grads = optim_detail::grads_of(params_, who);
    step_.data<int64_t>()[0] += 1;
    optim_detail::UpdateList<kernels::AdamTensor> updates;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const Tensor& g_t = grads[i];
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
        kernels::AdamParams q;
        q.n = params_[i].numel();
        q.k1 = static_cast<float>(1.0 - static_cast<double>(beta1_));
        q.k2 = static_cast<float>(1.0 - static_cast<double>(beta2_));
        q.decay =
            static_cast<float>(1.0 - static_cast<double>(lr) * static_cast<double>(weight_decay_));
        q.b1 = beta1_, q.b2 = beta2_, q.eps = eps_, q.wd = weight_decay_;
        q.c2s = c2s, q.neg_step = neg_step, q.decoupled = decoupled_;
        updates.add(params_[i].device(),
                    {params_[i].f32(), g_t.f32(), exp_avg_[i].f32(), exp_avg_sq_[i].f32(), q});
    }
    updates.run([](Device d, const kernels::AdamTensor* t, int64_t n) {
        device_kernels(d).adam_update_each(t, n);
    });
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
