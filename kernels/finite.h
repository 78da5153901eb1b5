// SPDX-License-Identifier: MIT
// Contract of the non-finite scan: the index of the first NaN or Inf of a float buffer. The
// tape's gradient check and the trainer scan every gradient of every step, so the CPU kernel
// tests blocks of 1024 with a vectorised, branch-free exponent test and searches only a block
// that holds a non-finite value element by element. No arithmetic: every implementation returns
// the same index.
#pragma once
#include <cstdint>

namespace dt::kernels {

namespace ref {
inline int64_t first_non_finite(const float* p, int64_t n);
}  // namespace ref

namespace cpu {
/// Index of the first NaN or Inf in p[0 .. n), or -1.
int64_t first_non_finite(const float* p, int64_t n);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
int64_t first_non_finite(const float* p, int64_t n);
}  // namespace cuda

}  // namespace dt::kernels
