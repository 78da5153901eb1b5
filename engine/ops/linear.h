// SPDX-License-Identifier: MIT
#pragma once
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// y = x w^T + b: x (N, I), w (O, I) (PyTorch layout), b (O) or undefined -> (N, O).
/// Reduction sites: linear.wgrad, linear.dgrad, bias.grad.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);

/// The backward of linear for dy (N, O): {dx, dw, db}, each computed only when its input
/// requires a gradient (undefined otherwise, and db also without a bias). linear's autograd
/// record calls it; so does detrain.ops (python/src/ops.cpp), without a tape.
std::vector<Tensor> linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                    const Tensor& dy);

}  // namespace dt
