// SPDX-License-Identifier: MIT
// Contract of the Adam / AdamW update kernels: one elementwise pass over a parameter p (n), its
// gradient and its first and second moments m, v (n). The single-tensor path of torch.optim.Adam
// / AdamW in PyTorch 1.13 (amsgrad = maximize = False); engine/optim/adam.h holds the optimizer,
// which computes the per-step scalars of AdamParams on the host (in double, see there).
// Numeric recipe, per element, float32, no fma (every implementation gives the same bits):
//   ORDER: AdamW: p = p * decay                  (skipped when wd == 0)
//          Adam:  g = grad + wd * p              (skipped when wd == 0)
//   ORDER: m = m * b1 + k1 * g                   (exp_avg.mul_(b1).add_(g, alpha=1-b1))
//   ORDER: v = v * b2 + (k2 * g) * g             (exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2))
//   ORDER: denom = sqrt(v) / c2s + eps           ((exp_avg_sq.sqrt() / c2s).add_(eps))
//   ORDER: p = p + (neg_step * m) / denom        (p.addcdiv_(m, denom, value=-step_size))
// sqrt is IEEE correctly rounded on every backend.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels {

struct AdamParams {
    int64_t n = 0;
    float b1 = 0.9f, b2 = 0.999f;  // betas
    float k1 = 0.1f, k2 = 0.001f;  // float(1 - b1), float(1 - b2)
    float c2s = 1.0f;              // float(sqrt(1 - b2^t))
    float eps = 1e-8f;
    float neg_step = 0.0f;  // -float(lr / (1 - b1^t))
    float wd = 0.0f;        // weight decay
    float decay = 1.0f;     // AdamW: float(1 - lr * wd)
    bool decoupled = false;  // AdamW
};

/// The recipe above for element k: what cpu:: and cuda:: run per element (host-device; sqrtf
/// is correctly rounded on the host and, without fast math, on the device).
DT_HD void adam_update_element(int64_t k, float* p, const float* grad, float* m, float* v,
                               const AdamParams& q) {
    const bool l2 = q.wd != 0.0f && !q.decoupled, decoupled = q.wd != 0.0f && q.decoupled;
    float g = grad[k];
    float pk = p[k];
    if (decoupled) pk = pk * q.decay;  // ORDER: AdamW decay before the Adam step
    if (l2) g = g + q.wd * pk;         // ORDER: L2 term rounded, then added
    const float mk = m[k] * q.b1 + q.k1 * g;           // ORDER: (m*b1) + (k1*g)
    const float vk = v[k] * q.b2 + (q.k2 * g) * g;     // ORDER: (v*b2) + ((k2*g)*g)
    const float denom = sqrtf(vk) / q.c2s + q.eps;     // ORDER: (sqrt(v)/c2s) + eps
    m[k] = mk;
    v[k] = vk;
    p[k] = pk + (q.neg_step * mk) / denom;  // ORDER: pk + ((-step_size*m)/denom)
}

/// One parameter of an optimizer step over all of them (adam_update_each): its buffers and the
/// scalars of its own step (each parameter counts its steps).
struct AdamTensor {
    float* p = nullptr;
    const float* grad = nullptr;
    float* m = nullptr;
    float* v = nullptr;
    AdamParams q;
};

namespace ref {
inline void adam_update(double* p, const double* grad, double* m, double* v, const AdamParams& q);
}  // namespace ref

namespace cpu {
/// p, m, v (n) updated in place from grad (n).
void adam_update(float* p, const float* grad, float* m, float* v, const AdamParams& q);
/// adam_update of each of t[0 .. count), in turn (the kernel-table entry).
void adam_update_each(const AdamTensor* t, int64_t count);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
/// adam_update of each of t[0 .. count) (a host array holding device pointers): one launch per
/// kBatchItems parameters, not one per parameter (elements are independent: the same bits).
void adam_update_each(const AdamTensor* t, int64_t count);
}  // namespace cuda

}  // namespace dt::kernels
