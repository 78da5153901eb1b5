// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

struct Conv2dOptions {
    int stride = 1;
    int padding = 0;  // zero padding on every side
};

/// 2-D cross-correlation (PyTorch's conv2d): x (N, Ci, H, W), w (Co, Ci, Kh, Kw), b (Co) or an
/// undefined tensor for no bias -> (N, Co, Ho, Wo), Ho = (H + 2p - Kh) / s + 1.
/// Reduction sites: conv.wgrad, conv.dgrad, bias.grad.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Conv2dOptions opt = {});

}  // namespace dt
