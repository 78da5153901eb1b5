// SPDX-License-Identifier: MIT
// The ops of detrain._detrain (python/src/ops.cpp): engine ops on NumPy arrays, per mode.
#pragma once
#include <nanobind/nanobind.h>

namespace dt::python {

/// Adds linear, linear_backward, conv2d, conv2d_backward and softmax_cross_entropy to the
/// module.
void bind_ops(nanobind::module_& m);

}  // namespace dt::python
