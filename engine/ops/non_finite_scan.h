// SPDX-License-Identifier: MIT
// dt::first_non_finite: where a float32 tensor holds its first NaN or Inf (the tape's gradient
// check and the trainer's scan of every gradient). Runs the scan kernel of the tensor's device
// (kernels/finite.h); not differentiable, records nothing.
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace dt {

/// Row-major index of the first NaN or Inf of t (float32, any device), or -1.
int64_t first_non_finite(const Tensor& t);

/// Element i of a float32 tensor (any device), copied to the host: for messages.
float element_at(const Tensor& t, int64_t i);

}  // namespace dt
