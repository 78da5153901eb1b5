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

/// order[0..n) = permute_order(n, key) drawn on the device by one thread, in the runtime's
/// scratch (valid until the next scratch user); nullptr when out of memory (recorded).
const uint32_t* permutation_on_device(int64_t n, uint64_t key);

/// Records a launch failure of `what` (a kernel's name) for take_error().
inline void check_launch(const char* what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) note_error(what, static_cast<int>(e));
}

}  // namespace dt::kernels::cuda
