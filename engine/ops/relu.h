// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// max(x, 0) elementwise, any shape; backward passes dy where x > 0.
Tensor relu(const Tensor& x);

}  // namespace dt
