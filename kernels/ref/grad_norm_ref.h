// SPDX-License-Identifier: MIT
// Reference sum of squares over a list of buffers, in double (deliberately naive).
#pragma once
#include "kernels/grad_norm.h"

namespace dt::kernels::ref {

inline double grad_norm_sq(const double* const* g, const int64_t* n, int64_t count) {
    double total = 0.0;
    for (int64_t b = 0; b < count; ++b)
        for (int64_t i = 0; i < n[b]; ++i) total += g[b][i] * g[b][i];
    return total;
}

}  // namespace dt::kernels::ref
