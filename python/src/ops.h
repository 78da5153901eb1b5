// SPDX-License-Identifier: MIT
// The ops of detrain._detrain (python/src/ops.cpp): engine ops on NumPy arrays, per mode.
#pragma once
#include <nanobind/nanobind.h>

#include <string>

#include "kernels/common/accum_mode.h"

namespace dt::python {

/// Adds linear, linear_backward, conv2d, conv2d_backward, softmax_cross_entropy, sum_rows,
/// batchnorm_stats, batchnorm and batchnorm_backward to the module.
void bind_ops(nanobind::module_& m);

/// Adds _kernel_seconds (python/src/ops_bench.cpp) to the module.
void bind_ops_bench(nanobind::module_& m);

/// "atomic|tree|kahan|exact|permuted:<seed>" -> the spec every site takes for a call; a
/// ValueError naming the mode otherwise.
kernels::common::AccumSpec accum_spec_of(const std::string& mode);

}  // namespace dt::python
