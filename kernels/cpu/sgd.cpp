// SPDX-License-Identifier: MIT
// SGD update on the CPU (recipe in kernels/sgd.h). Elements are independent, so the static
// OpenMP split over elements cannot change a bit.
#include "kernels/sgd.h"

namespace dt::kernels::cpu {

void sgd_update(float* p, const float* grad, float* buf, const SgdParams& q) {
    const float mom = q.momentum, wd = q.weight_decay, lr = q.lr;
    const bool nesterov = q.nesterov, first = q.first;
    const int64_t n = q.n;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
    for (int64_t k = 0; k < n; ++k) {
        float g = grad[k];
        if (wd != 0.0f) g = g + wd * p[k];  // ORDER: L2 term rounded, then added
        if (buf != nullptr) {
            const float b = first ? g : mom * buf[k] + g;  // ORDER: (mom*buf) + g
            buf[k] = b;
            g = nesterov ? g + mom * b : b;  // ORDER: g + (mom*buf)
        }
        p[k] = p[k] - lr * g;  // ORDER: (lr*g) rounded, then subtracted
    }
}

}  // namespace dt::kernels::cpu
