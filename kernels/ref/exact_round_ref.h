// SPDX-License-Identifier: MIT
// Reference rounding of exact accumulators: common::exact_value per element, in index order, on
// one thread.
#pragma once
#include <cstdint>

#include "kernels/exact_round.h"

namespace dt::kernels::ref {

inline void exact_round(const common::ExactAcc* accs, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = common::exact_value(accs[i]);
}

}  // namespace dt::kernels::ref
