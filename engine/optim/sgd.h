// SPDX-License-Identifier: MIT
// SGD with optional momentum, Nesterov momentum and L2 weight decay: torch.optim.SGD of PyTorch
// 1.13 with dampening = 0 and maximize = False. Per element, in this order (float32, no fma):
//   ORDER: g = grad + wd * p                      (skipped when wd == 0)
//   ORDER: buf = g                                 (first update of this parameter)
//          buf = momentum * buf + g                (later updates; skipped when momentum == 0)
//   ORDER: g = nesterov ? g + momentum * buf : buf (only when momentum != 0)
//   ORDER: p = p - lr * g                          (= PyTorch's p.add_(g, alpha=-lr), bitwise)
#pragma once
#include "engine/optim/optimizer.h"

namespace dt {

class Sgd : public Optimizer {
 public:
    /// Uses cfg.momentum, cfg.nesterov, cfg.weight_decay. Throws ValueError for momentum < 0,
    /// weight_decay < 0, or nesterov without momentum.
    Sgd(std::vector<Tensor> params, const OptimizerConfig& cfg);
    void step(float lr) override;
    /// "step" (int64, calls to step()), per parameter i: "param<i>.step" (int64, updates of that
    /// parameter) and, with momentum, "param<i>.momentum_buffer" (same shape as the parameter).
    std::vector<std::pair<std::string, Tensor>> state() override;

 private:
    float momentum_, weight_decay_;
    bool nesterov_;
    Tensor step_;                // int64 scalar
    std::vector<Tensor> steps_;  // int64 scalar per parameter
    std::vector<Tensor> buf_;    // momentum buffer per parameter (undefined without momentum)
};

}  // namespace dt
