// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// (N, d1, d2, ...) -> (N, d1*d2*...), differentiable; shares the buffer.
Tensor flatten(const Tensor& x);

/// Differentiable reshape to `shape` (same element count); shares the buffer.
Tensor reshape(const Tensor& x, const Shape& shape);

/// Copies src into rows [row, row + src.dim(0)) of dst along dimension 0 (a KV cache's new
/// tokens): the same trailing shape, dtype and device. Not differentiable; dst is written in
/// place, its other rows kept.
void write_rows(Tensor& dst, int64_t row, const Tensor& src);

}  // namespace dt
