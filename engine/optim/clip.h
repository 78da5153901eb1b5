// SPDX-License-Identifier: MIT
// Global-norm gradient clipping (site grad.norm; the recipe is kernels/grad_norm.h).
#pragma once
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// Scales the gradients of `params` by max_norm / norm when their global L2 norm exceeds
/// max_norm, as torch.nn.utils.clip_grad_norm_ does (without its 1e-6). Parameters without a
/// gradient are skipped; the rest must share one device. The sum of squares runs in grad.norm's
/// mode; the scale is computed on the device, so nothing waits for it. Returns the sum of squares
/// before clipping, one float on that device (undefined without gradients): the norm is the
/// square root of its item(), which waits. Throws ValueError for a max_norm that is not a finite
/// value > 0.
Tensor clip_grad_norm(const std::vector<Tensor>& params, float max_norm);

}  // namespace dt
