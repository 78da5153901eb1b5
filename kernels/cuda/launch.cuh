// SPDX-License-Identifier: MIT
// What the CUDA launchers share: the engine's one stream and the launch-error check. Included by
// kernels/cuda/*.cu only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace dt::kernels::cuda {

/// The stream every kernel and copy of the engine runs on (created on first use).
cudaStream_t stream();

/// Records a launch failure of `what` (a kernel's name) for take_error().
inline void check_launch(const char* what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) note_error(what, static_cast<int>(e));
}

}  // namespace dt::kernels::cuda
