// SPDX-License-Identifier: MIT
// Host entry points that run kernels/common/ functions on the device (for the CUDA tests).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dt::kernels::cuda {

/// reduce_tree_combine(host_partials, n) evaluated by one device thread.
cudaError_t tree_combine_on_device(const float* host_partials, int64_t n, float* host_out);
/// philox_draw(seed, kTest, first + i) for i in [0, n): 4 words each, written to host_out.
cudaError_t philox_on_device(uint64_t seed, uint64_t first, int64_t n, uint32_t* host_out);

}  // namespace dt::kernels::cuda
