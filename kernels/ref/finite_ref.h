// SPDX-License-Identifier: MIT
// Reference non-finite scan: one std::isfinite per element, in index order.
#pragma once
#include <cmath>

#include "kernels/finite.h"

namespace dt::kernels::ref {

inline int64_t first_non_finite(const float* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return i;
    return -1;
}

}  // namespace dt::kernels::ref
