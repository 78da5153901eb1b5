// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace dt {

/// Layer normalisation over the last dimension (GPT-2's): x (M, C) or (B, T, C), gamma and beta
/// (C) -> y of x's shape. Each token's features are normalised with their own mean and biased
/// variance: y = ((x - mean) * rstd) * gamma + beta, rstd = 1 / sqrt(var + eps). `seq_len` is T,
/// the tokens of a sequence (M = B * T; a 3-D x must have x.shape[1] == seq_len): the backward's
/// dgamma and dbeta sum a leaf per sequence (kernels/layer_norm.h). Reduction sites: ln.stats
/// (forward), ln.grad (backward).
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t seq_len,
                  float eps = 1e-5f);

}  // namespace dt
