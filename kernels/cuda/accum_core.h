// SPDX-License-Identifier: MIT
// Host entry points that run the accumulation modes of kernels/common/ (accum_exact.h,
// accum_kahan.h, accum_permuted.h, atomic_add.h) on the device, for the CUDA tests.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dt::kernels::cuda {

/// exact sum of host_x[0..n) on one block of `threads` threads: thread t accumulates elements
/// t, t + threads, ... into its own ExactAcc, then thread 0 merges them in thread order and rounds.
cudaError_t exact_sum_on_device(const float* host_x, int64_t n, int threads, float* host_out);
/// kahan_sum_chunked(host_x, n, chunk) evaluated by one device thread.
cudaError_t kahan_sum_on_device(const float* host_x, int64_t n, int64_t chunk, float* host_out);
/// permute_order(host_out, n, key) evaluated by one device thread.
cudaError_t permute_order_on_device(uint64_t key, int64_t n, uint32_t* host_out);
/// n device threads each atomic_add_float 1.0f into one float that starts at +0.
cudaError_t atomic_count_on_device(int64_t n, float* host_out);

}  // namespace dt::kernels::cuda
