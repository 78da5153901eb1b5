// SPDX-License-Identifier: MIT
// Contract of the linear kernels: y = x w^T + b with x (N, I), w (O, I) (PyTorch layout),
// b (O) or null, y (N, O).
// Numeric recipes (the CPU kernels; ref:: computes the same sums in double):
// - forward: ORDER: y[s,o] = (+0 + sum over i ascending of x[s,i] * w[o,i]) + b[o]
//   (gemm_f32_k_sequential with B = W^T, then one bias add).
// - linear.dgrad (tree mode): ORDER: dx[s,i] = +0 + sum over o ascending of dy[s,o] * w[o,i]
//   (sequential; no cross-sample reduction).
// - linear.wgrad (tree mode): leaf_s[o,i] = dy[s,o] * x[s,i] (a sample contributes one product);
//   ORDER: dw = left-complete tree (kernels/common/reduce_tree.h) over s = 0..N-1.
// - bias.grad: the bias_add_backward kernel (kernels/bias_add.h) with C = O, P = 1.
// Threads own output rows/blocks or (row, column-chunk) pieces of dw; no result depends on the
// thread count or the ISA path.
#pragma once
#include <cstdint>

#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct LinearParams {
    int64_t n = 0, in = 0, out = 0;
    common::AccumMode mode = common::AccumMode::kTree;  // of the site being computed
};

namespace ref {
void linear_forward(const double* x, const double* w, const double* b, double* y,
                    const LinearParams& p);
void linear_backward_data(const double* dy, const double* w, double* dx, const LinearParams& p);
void linear_backward_weight(const double* x, const double* dy, double* dw,
                            const LinearParams& p);
}  // namespace ref

namespace cpu {
/// x (N, I), w (O, I), b (O) or nullptr -> y (N, O).
void linear_forward(const float* x, const float* w, const float* b, float* y,
                    const LinearParams& p);
/// linear.dgrad: dy (N, O), w (O, I) -> dx (N, I), overwritten.
void linear_backward_data(const float* dy, const float* w, float* dx, const LinearParams& p);
/// linear.wgrad: x (N, I), dy (N, O) -> dw (O, I), overwritten.
void linear_backward_weight(const float* x, const float* dy, float* dw, const LinearParams& p);
}  // namespace cpu

}  // namespace dt::kernels
