// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// (N, d1, d2, ...) -> (N, d1*d2*...), differentiable; shares the buffer.
Tensor flatten(const Tensor& x);

/// Differentiable reshape to `shape` (same element count); shares the buffer.
Tensor reshape(const Tensor& x, const Shape& shape);

}  // namespace dt
