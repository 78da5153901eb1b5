// SPDX-License-Identifier: MIT
// SGD: hyper-parameter checks, per-parameter state, and the update kernel (kernels/sgd.h, whose
// recipe sgd.h repeats) through the kernel table of each parameter's device.
#include "engine/optim/sgd.h"

#include <cmath>

#include "engine/core/backend.h"

namespace dt {

Sgd::Sgd(std::vector<Tensor> params, const OptimizerConfig& cfg)
    : Optimizer(std::move(params)),
      momentum_(cfg.momentum),
      weight_decay_(cfg.weight_decay),
      nesterov_(cfg.nesterov) {
    optim_detail::check_params(params_, "sgd");
    // isfinite also rejects NaN, for which every comparison is false.
    DT_CHECK_VALUE(std::isfinite(momentum_) && momentum_ >= 0.0f, "sgd: momentum must be a finite",
                   " value >= 0, got ", momentum_, " (hint: 0.9 is usual; 0 disables momentum)");
    DT_CHECK_VALUE(std::isfinite(weight_decay_) && weight_decay_ >= 0.0f, "sgd: weight_decay",
                   " must be a finite value >= 0, got ", weight_decay_,
                   " (hint: 5e-4 is usual for CIFAR; 0 disables it)");
    DT_CHECK_VALUE(!nesterov_ || momentum_ > 0.0f, "sgd: nesterov needs momentum > 0, got ",
                   "momentum ", momentum_, " (hint: set momentum, e.g. 0.9, or turn nesterov off)");
    step_ = optim_detail::zero_counter();
    for (const Tensor& p : params_) {
        steps_.push_back(optim_detail::zero_counter());
        buf_.push_back(momentum_ != 0.0f ? Tensor::zeros(p.shape(), DType::kF32, p.device())
                                         : Tensor());
    }
}

void Sgd::step(float lr) {
    const std::vector<Tensor> grads = optim_detail::grads_of(params_, "sgd");
    step_.data<int64_t>()[0] += 1;
    optim_detail::UpdateList<kernels::SgdTensor> updates;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const Tensor& g_t = grads[i];
        if (!g_t.defined()) continue;
        int64_t& t = steps_[i].data<int64_t>()[0];
        const bool first = t == 0;
        t += 1;
        kernels::SgdParams q;
        q.n = params_[i].numel();
        q.lr = lr, q.momentum = momentum_, q.weight_decay = weight_decay_;
        q.nesterov = nesterov_, q.first = first;
        updates.add(params_[i].device(),
                    {params_[i].f32(), g_t.f32(), momentum_ != 0.0f ? buf_[i].f32() : nullptr, q});
    }
    updates.run([](Device d, const kernels::SgdTensor* t, int64_t n) {
        device_kernels(d).sgd_update_each(t, n);
    });
}

std::vector<std::pair<std::string, Tensor>> Sgd::state() {
    std::vector<std::pair<std::string, Tensor>> out = {{"step", step_}};
    for (std::size_t i = 0; i < params_.size(); ++i) {
        out.emplace_back(str("param", i, ".step"), steps_[i]);
        if (buf_[i].defined()) out.emplace_back(str("param", i, ".momentum_buffer"), buf_[i]);
    }
    return out;
}

}  // namespace dt
