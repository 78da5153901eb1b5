// SPDX-License-Identifier: MIT
// dt::first_non_finite: where a float32 tensor holds its first NaN or Inf (the tape's gradient
// check and the trainer's scan of every gradient). Runs the scan kernel of the tensor's device
// (kernels/finite.h); not differentiable, records nothing.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// Row-major index of the first NaN or Inf of t (float32, any device), or -1.
int64_t first_non_finite(const Tensor& t);

/// first_non_finite of each tensor (float32, all on one device), in one scan: on the GPU one
/// wait for the device for all of them (the trainer scans every gradient of every step).
std::vector<int64_t> first_non_finite_each(std::span<const Tensor> ts);

/// Element i of a float32 tensor (any device), copied to the host: for messages.
float element_at(const Tensor& t, int64_t i);

}  // namespace dt
