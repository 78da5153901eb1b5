// SPDX-License-Identifier: MIT
// Reference bias_add in double precision (deliberately naive; see kernels/bias_add.h).
#pragma once
#include "kernels/bias_add.h"

namespace dt::kernels::ref {

inline void bias_add_forward(const double* x, const double* b, double* y,
                             const BiasAddParams& p) {
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t c = 0; c < p.c; ++c)
            for (int64_t q = 0; q < p.p; ++q) {
                const int64_t i = (s * p.c + c) * p.p + q;
                y[i] = x[i] + b[c];
            }
}

inline void bias_add_backward(const double* dy, double* db, const BiasAddParams& p) {
    for (int64_t c = 0; c < p.c; ++c) {
        double acc = 0.0;
        for (int64_t s = 0; s < p.n; ++s)
            for (int64_t q = 0; q < p.p; ++q) acc += dy[(s * p.c + c) * p.p + q];
        db[c] = acc;
    }
}

}  // namespace dt::kernels::ref
