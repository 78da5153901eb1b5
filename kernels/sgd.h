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

#include "kernels/common/hd.h"

namespace dt::kernels {

struct SgdParams {
    int64_t n = 0;
    float lr = 0.0f, momentum = 0.0f, weight_decay = 0.0f;
    bool nesterov = false;  // needs momentum != 0
    bool first = false;     // the parameter's first update: the buffer starts as g
};

/// The recipe above for element k: what cpu:: and cuda:: run per element (host-device).
DT_HD void sgd_update_element(int64_t k, float* p, const float* grad, float* buf,
                              const SgdParams& q) {
    float g = grad[k];
    if (q.weight_decay != 0.0f) g = g + q.weight_decay * p[k];  // ORDER: L2 term rounded, added
    if (buf != nullptr) {
        const float b = q.first ? g : q.momentum * buf[k] + g;  // ORDER: (mom*buf) + g
        buf[k] = b;
        g = q.nesterov ? g + q.momentum * b : b;  // ORDER: g + (mom*buf)
    }
    p[k] = p[k] - q.lr * g;  // ORDER: (lr*g) rounded, then subtracted
}

/// One parameter of an optimizer step over all of them (sgd_update_each).
struct SgdTensor {
    float* p = nullptr;
    const float* grad = nullptr;
    float* buf = nullptr;  // nullptr when q.momentum == 0
    SgdParams q;
};

namespace ref {
inline void sgd_update(double* p, const double* grad, double* buf, const SgdParams& q);
}  // namespace ref

namespace cpu {
/// p (n) updated in place from grad (n); buf (n) is the momentum buffer, nullptr when
/// q.momentum == 0.
void sgd_update(float* p, const float* grad, float* buf, const SgdParams& q);
/// sgd_update of each of t[0 .. count), in turn (the kernel-table entry).
void sgd_update_each(const SgdTensor* t, int64_t count);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
/// sgd_update of each of t[0 .. count) (a host array holding device pointers): one launch per
/// kBatchItems parameters.
void sgd_update_each(const SgdTensor* t, int64_t count);
}  // namespace cuda

}  // namespace dt::kernels
