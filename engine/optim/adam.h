// SPDX-License-Identifier: MIT
// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay), following the
// single-tensor path of torch.optim.Adam / AdamW in PyTorch 1.13 (amsgrad = maximize = False).
// Per parameter with t = its update count (1 at the first update), in double on the host:
//   ORDER: b1t = b1 * b1 * ... (t factors, by repeated multiplication, no pow); same for b2t
//          c1 = 1 - b1t,  c2 = 1 - b2t,  step_size = float(lr / c1),  c2s = float(sqrt(c2))
//          k1 = float(1 - b1), k2 = float(1 - b2), decay = float(1 - lr * wd)   (AdamW)
// then per element in float32, without fma:
//   ORDER: AdamW: p = p * decay                  (skipped when wd == 0)
//          Adam:  g = grad + wd * p              (skipped when wd == 0)
//   ORDER: m = m * b1 + k1 * g                   (exp_avg.mul_(b1).add_(g, alpha=1-b1))
//   ORDER: v = v * b2 + (k2 * g) * g             (exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2))
//   ORDER: denom = sqrt(v) / c2s + eps           ((exp_avg_sq.sqrt() / c2s).add_(eps))
//   ORDER: p = p + ((-step_size) * m) / denom    (p.addcdiv_(m, denom, value=-step_size))
// Differences from a PyTorch run: beta1/beta2 are the float32 values of OptimizerConfig (PyTorch
// keeps Python doubles), b^t is a repeated product, and PyTorch's vectorised add(alpha) may fuse.
#pragma once
#include "engine/optim/optimizer.h"

namespace dt {

class Adam : public Optimizer {
 public:
    /// Uses cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay; `decoupled` selects AdamW.
    /// Throws ValueError for betas outside [0, 1), eps <= 0 or weight_decay < 0.
    Adam(std::vector<Tensor> params, const OptimizerConfig& cfg, bool decoupled);
    void step(float lr) override;
    /// "step" (int64, calls to step()) and per parameter i: "param<i>.step" (int64),
    /// "param<i>.exp_avg", "param<i>.exp_avg_sq" (same shape as the parameter).
    std::vector<std::pair<std::string, Tensor>> state() override;

 private:
    struct Powers {  // b1^t, b2^t for the last t, so each step multiplies once
        int64_t t = 0;
        double b1t = 1.0, b2t = 1.0;
    };
    float beta1_, beta2_, eps_, weight_decay_;
    bool decoupled_;
    Tensor step_;
    std::vector<Tensor> steps_, exp_avg_, exp_avg_sq_;
    std::vector<Powers> powers_;
};

}  // namespace dt
