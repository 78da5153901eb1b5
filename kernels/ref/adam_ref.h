// SPDX-License-Identifier: MIT
// Reference Adam / AdamW update in double precision (the recipe of kernels/adam.h with the
// float coefficients of AdamParams, each operation exact to double rounding).
#pragma once
#include <cmath>

#include "kernels/adam.h"

namespace dt::kernels::ref {

inline void adam_update(double* p, const double* grad, double* m, double* v,
                        const AdamParams& q) {
    const bool l2 = q.wd != 0.0f && !q.decoupled, decoupled = q.wd != 0.0f && q.decoupled;
    for (int64_t k = 0; k < q.n; ++k) {
        double g = grad[k];
        double pk = p[k];
        if (decoupled) pk = pk * q.decay;
        if (l2) g = g + double{q.wd} * pk;
        m[k] = m[k] * q.b1 + double{q.k1} * g;
        v[k] = v[k] * q.b2 + (double{q.k2} * g) * g;
        const double denom = std::sqrt(v[k]) / q.c2s + q.eps;
        p[k] = pk + (double{q.neg_step} * m[k]) / denom;
    }
}

}  // namespace dt::kernels::ref
