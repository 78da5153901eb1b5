// SPDX-License-Identifier: MIT
// Reference SGD update in double precision (the recipe of kernels/sgd.h, each operation exact to
// double rounding).
#pragma once
#include "kernels/sgd.h"

namespace dt::kernels::ref {

inline void sgd_update(double* p, const double* grad, double* buf, const SgdParams& q) {
    const double mom = q.momentum, wd = q.weight_decay, lr = q.lr;
    for (int64_t k = 0; k < q.n; ++k) {
        double g = grad[k];
        if (wd != 0.0) g = g + wd * p[k];
        if (buf != nullptr) {
            const double b = q.first ? g : mom * buf[k] + g;
            buf[k] = b;
            g = q.nesterov ? g + mom * b : b;
        }
        p[k] = p[k] - lr * g;
    }
}

}  // namespace dt::kernels::ref
