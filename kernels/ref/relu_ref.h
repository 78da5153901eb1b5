// SPDX-License-Identifier: MIT
// Reference ReLU in double precision (deliberately naive).
#pragma once
#include "kernels/relu.h"

namespace dt::kernels::ref {

inline void relu_forward(const double* x, double* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] <= 0.0 ? 0.0 : x[i];
}

inline void relu_backward(const double* x, const double* dy, double* dx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0 ? dy[i] : 0.0;
}

}  // namespace dt::kernels::ref
