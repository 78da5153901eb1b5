// SPDX-License-Identifier: MIT
#pragma once
#include "engine/core/tensor.h"

namespace dt {

struct BatchNormOptions {
    bool training = true;   // batch statistics (and running-statistics update) vs running ones
    float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch (PyTorch)
    float eps = 1e-5f;
};

/// Batch normalisation over (N, H, W) per channel: x (N, C, H, W), gamma/beta (C) ->
/// (N, C, H, W). In training mode normalises with the biased batch variance and updates
/// running_mean / running_var (C) in place, the latter with the unbiased variance (PyTorch).
/// In eval mode uses the running statistics. Reduction sites: bn.stats, bn.backward.
Tensor batchnorm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                   Tensor& running_mean, Tensor& running_var, const BatchNormOptions& opt);

}  // namespace dt
