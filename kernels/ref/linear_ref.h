// SPDX-License-Identifier: MIT
// Reference linear layer in double precision (deliberately naive; see kernels/linear.h).
#pragma once
#include "kernels/linear.h"

namespace dt::kernels::ref {

inline void linear_forward(const double* x, const double* w, const double* b, double* y,
                           const LinearParams& p) {
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.out; ++o) {
            double acc = 0.0;
            for (int64_t i = 0; i < p.in; ++i) acc += x[s * p.in + i] * w[o * p.in + i];
            y[s * p.out + o] = acc + (b ? b[o] : 0.0);
        }
}

inline void linear_backward_data(const double* dy, const double* w, double* dx,
                                 const LinearParams& p) {
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t i = 0; i < p.in; ++i) {
            double acc = 0.0;
            for (int64_t o = 0; o < p.out; ++o) acc += dy[s * p.out + o] * w[o * p.in + i];
            dx[s * p.in + i] = acc;
        }
}

inline void linear_backward_weight(const double* x, const double* dy, double* dw,
                                   const LinearParams& p) {
    for (int64_t o = 0; o < p.out; ++o)
        for (int64_t i = 0; i < p.in; ++i) {
            double acc = 0.0;
            for (int64_t s = 0; s < p.n; ++s) acc += dy[s * p.out + o] * x[s * p.in + i];
            dw[o * p.in + i] = acc;
        }
}

}  // namespace dt::kernels::ref
