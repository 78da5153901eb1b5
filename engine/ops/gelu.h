// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// GELU, tanh form (kernels/gelu.h), elementwise, any shape; backward dy * GELU'(x).
Tensor gelu(const Tensor& x);

}  // namespace dt
