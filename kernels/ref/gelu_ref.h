// SPDX-License-Identifier: MIT
// Reference GELU (tanh form) in double precision. 1 + tanh u = 2 / (1 + e^(-2u)) and
// 1 - tanh^2 u = 4 e^(-2|u|) / (1 + e^(-2|u|))^2: the naive 1 + tanh u loses every digit in
// double once tanh u rounds to -1 (u < -19), where GELU is still far from 0 in float.
#pragma once
#include <cmath>
#include <numbers>

#include "kernels/gelu.h"

namespace dt::kernels::ref {

inline double gelu_u(double x) {
    return std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
}

inline void gelu_forward(const double* x, double* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = 0.5 * x[i] * (2.0 / (1.0 + std::exp(-2.0 * gelu_u(x[i]))));
}

inline void gelu_backward(const double* x, const double* dy, double* dx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const double u = gelu_u(x[i]), e = std::exp(-2.0 * std::fabs(u));
        const double p = 2.0 / (1.0 + std::exp(-2.0 * u)), s = 4.0 * e / ((1.0 + e) * (1.0 + e));
        const double du = std::sqrt(2.0 / std::numbers::pi) * (1.0 + 3.0 * 0.044715 * x[i] * x[i]);
        dx[i] = dy[i] * (0.5 * p + 0.5 * x[i] * s * du);
    }
}

}  // namespace dt::kernels::ref
