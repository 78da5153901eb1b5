// SPDX-License-Identifier: MIT
// Reference elementwise add in double precision.
#pragma once
#include "kernels/add.h"

namespace dt::kernels::ref {

inline void add_forward(const double* a, const double* b, double* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace dt::kernels::ref
