// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// a + b elementwise, same shapes (residual connections).
Tensor add(const Tensor& a, const Tensor& b);

}  // namespace dt
