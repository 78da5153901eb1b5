// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace dt {

/// Fills float32 `w` in place, on its device, with the init stream's values (kernels/init.h):
/// element i is (2 u - 1) * bound with u drawn from philox(seed, kInit, index i, sub): the same
/// bits on every device and thread count. Not recorded on the tape (an initialisation, not a
/// computation to differentiate). Throws ValueError for a bound that is negative or not finite.
void init_uniform_(Tensor& w, uint64_t seed, uint32_t sub, float bound);

}  // namespace dt
