// SPDX-License-Identifier: MIT
// Reference exact_add_rows / exact_sum_rows / exact_add_lanes / exact_add_columns: one
// exact_add per leaf, in row order (see
// kernels/exact_rows.h).
#pragma once
#include "kernels/exact_rows.h"

namespace dt::kernels::ref {

inline void exact_add_rows(common::ExactAcc* acc, const float* x, int64_t stride, int64_t count,
                           int64_t n) {
    for (int64_t j = 0; j < count; ++j)
        for (int64_t i = 0; i < n; ++i) common::exact_add(acc[i], x[j * stride + i]);
}

inline void exact_sum_rows(float* out, const float* x, int64_t stride, int64_t count, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        common::ExactAcc a;
        common::exact_init(a);
        for (int64_t j = 0; j < count; ++j) common::exact_add(a, x[j * stride + i]);
        out[i] = common::exact_value(a);
    }
}

inline void exact_add_lanes(common::ExactAcc& a, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) common::exact_add(a, x[i]);
    common::exact_normalise(a);
}

inline void exact_add_columns(common::ExactAcc& a, const float* x, int64_t stride, int64_t count,
                              int64_t n) {
    for (int64_t j = 0; j < count; ++j)
        for (int64_t i = 0; i < n; ++i) common::exact_add(a, x[j * stride + i]);
    common::exact_normalise(a);
}

}  // namespace dt::kernels::ref
