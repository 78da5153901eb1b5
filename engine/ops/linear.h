// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

/// y = x w^T + b: x (N, I), w (O, I) (PyTorch layout), b (O) or undefined -> (N, O).
/// Reduction sites: linear.wgrad, linear.dgrad, bias.grad.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);

}  // namespace dt
