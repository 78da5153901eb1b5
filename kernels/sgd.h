// SPDX-License-Identifier: MIT
// Contract of the SGD update kernels: one elementwise pass over a parameter p (n), its gradient
// and, with momentum, its momentum buffer (n). torch.optim.SGD of PyTorch 1.13 with dampening = 0
// and maximize = False (engine/optim/sgd.h holds the optimizer around it).
// Numeric recipe, per element, float32, no fma (every implementation gives the same bits):
//   ORDER: g = grad + wd * p                       (skipped when wd == 0)
//   ORDER: buf = g                                  (first update: p.first)
//          buf = momentum * buf + g                 (later updates; no buffer when momentum == 0)
//   ORDER: g = nesterov ? g + momentum * buf : buf  (only with a buffer)
//   ORDER: p = p - lr * g                           (= PyTorch's p.add_(g, alpha=-lr), bitwise)
#pragma once
#include <cstdint>

namespace dt::kernels {

struct SgdParams {
    int64_t n = 0;
    float lr = 0.0f, momentum = 0.0f, weight_decay = 0.0f;
    bool nesterov = false;  // needs momentum != 0
    bool first = false;     // the parameter's first update: the buffer starts as g
};

namespace ref {
inline void sgd_update(double* p, const double* grad, double* buf, const SgdParams& q);
}  // namespace ref

namespace cpu {
/// p (n) updated in place from grad (n); buf (n) is the momentum buffer, nullptr when
/// q.momentum == 0.
void sgd_update(float* p, const float* grad, float* buf, const SgdParams& q);
}  // namespace cpu

}  // namespace dt::kernels
