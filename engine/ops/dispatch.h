// SPDX-License-Identifier: MIT
// Helpers shared by the public ops: argument checks that every op makes at its boundary, and the
// device switch. Ops call kernels through an explicit `switch (device)` (no registry).
#pragma once
#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace dt::ops_detail {

/// Throws unless t is a defined float32 tensor with `ndim` dimensions (ndim < 0: any).
inline void check_f32(const Tensor& t, const char* op, const char* what, int ndim = -1) {
    DT_CHECK(t.defined(), op, ": ", what, " is undefined");
    DT_CHECK_T(DTypeError, t.dtype() == DType::kF32, op, ": ", what, " must be float32, got ",
               t.str());
    DT_CHECK_SHAPE(ndim < 0 || t.ndim() == ndim, op, ": ", what, " must have ", ndim,
                   " dimensions, got ", t.str());
}

/// Throws the standard "no CUDA kernels" error for `op`.
[[noreturn]] inline void no_cuda(const char* op) {
    throw DeviceError(str(op, ": no CUDA kernel in this build (tensors on cuda are not supported "
                          "yet; configure with -DDT_ENABLE_CUDA=ON once the CUDA backend lands)"));
}

}  // namespace dt::ops_detail
