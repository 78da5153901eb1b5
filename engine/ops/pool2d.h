// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

struct Pool2dOptions {
    int kernel = 2;
    int stride = 2;
    int padding = 0;  // max pool: padded cells never win; avg pool: count_include_pad = true
};

/// Max pooling: x (N, C, H, W) -> (N, C, Ho, Wo). Ties go to the first maximum in row-major
/// window order. Reduction site: pool.backward (overlapping windows).
Tensor maxpool2d(const Tensor& x, Pool2dOptions opt = {});

/// maxpool2d(relu(x)) fused, bit for bit (values, gradients, pool.backward call counts): relu is
/// monotone, so the max of the relu'd window is relu of the window's max, and the gradient of a
/// window reaches its arg-max only where that max is > 0. Saves relu's full-size output and its
/// full-size backward pass (they touch 4x the pooled size for 2x2 windows).
Tensor relu_maxpool2d(const Tensor& x, Pool2dOptions opt = {});

/// Average pooling with the divisor kernel*kernel (padding counts): same shapes as maxpool2d.
Tensor avgpool2d(const Tensor& x, Pool2dOptions opt = {});

/// Mean over H and W: x (N, C, H, W) -> (N, C).
Tensor global_avgpool(const Tensor& x);

}  // namespace dt
