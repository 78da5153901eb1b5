// SPDX-License-Identifier: MIT
// Contract of the elementwise add kernels: y = a + b. No reduction, so every implementation is
// bitwise identical (one correctly rounded add per element).
#pragma once
#include <cstdint>

namespace dt::kernels {

namespace ref {
inline void add_forward(const double* a, const double* b, double* y, int64_t n);
}  // namespace ref

namespace cpu {
void add_forward(const float* a, const float* b, float* y, int64_t n);  // (n),(n) -> (n)
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
void add_forward(const float* a, const float* b, float* y, int64_t n);
}  // namespace cuda

}  // namespace dt::kernels
