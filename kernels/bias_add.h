// SPDX-License-Identifier: MIT
// Contract of the bias_add kernels: y[s, c, q] = x[s, c, q] + b[c] for x viewed as (N, C, P)
// (P = product of the trailing dimensions, 1 for a (N, C) matrix).
// Numeric recipes:
// - forward: one add per element, no reduction (bitwise identical everywhere).
// - bias.grad (tree mode): leaf_s[c] = +0 + dy[s,c,0] + dy[s,c,1] + ... (positions ascending);
//   ORDER: db[c] = left-complete tree (kernels/common/reduce_tree.h) over s = 0..N-1.
//   Shared by bias_add, conv2d and linear (all three report the bias.grad site).
#pragma once
#include <cstdint>

#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct BiasAddParams {
    int64_t n = 0, c = 0, p = 1;
    common::AccumMode mode = common::AccumMode::kTree;  // bias.grad
};

namespace ref {
void bias_add_forward(const double* x, const double* b, double* y, const BiasAddParams& p);
void bias_add_backward(const double* dy, double* db, const BiasAddParams& p);
}  // namespace ref

namespace cpu {
/// x (N, C, P), b (C) -> y (N, C, P); y may alias x.
void bias_add_forward(const float* x, const float* b, float* y, const BiasAddParams& p);
/// bias.grad: dy (N, C, P) -> db (C), overwritten.
void bias_add_backward(const float* dy, float* db, const BiasAddParams& p);
}  // namespace cpu

}  // namespace dt::kernels
