// SPDX-License-Identifier: MIT
// Reference exact_add_rows: one exact_add per leaf, in row order (see kernels/exact_rows.h).
#pragma once
#include "kernels/exact_rows.h"

namespace dt::kernels::ref {

inline void exact_add_rows(common::ExactAcc* acc, const float* x, int64_t stride, int64_t count,
                           int64_t n) {
    for (int64_t j = 0; j < count; ++j)
        for (int64_t i = 0; i < n; ++i) common::exact_add(acc[i], x[j * stride + i]);
}

}  // namespace dt::kernels::ref
