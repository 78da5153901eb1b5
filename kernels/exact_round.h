// SPDX-License-Identifier: MIT
// Contract of the rounding of exact accumulators: out[i] = exact_value(accs[i]), the single
// rounding of the exact mode (kernels/common/accum_exact.h), for many accumulators at once: the
// gradients of a split batch at the end of a step (engine/runtime/batch_split.h), on the device
// that holds the accumulators, so that they need not travel to the host (80 bytes each) when no
// other process takes part. No arithmetic order: integer work, then one rounding per element;
// every implementation gives exact_value's bits.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"

namespace dt::kernels {

namespace cpu {
/// out[i] = common::exact_value(accs[i]) for i < n (over the threads for long arrays).
void exact_round(const common::ExactAcc* accs, int64_t n, float* out);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
void exact_round(const common::ExactAcc* accs, int64_t n, float* out);
}  // namespace cuda

}  // namespace dt::kernels
