// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// y[n, c, ...] = x[n, c, ...] + b[c]: x (N, C, ...) of any rank >= 2, b (C).
/// Reduction site: bias.grad (sum of dy over samples and positions).
Tensor bias_add(const Tensor& x, const Tensor& b);

}  // namespace dt
