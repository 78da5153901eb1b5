// SPDX-License-Identifier: MIT
// Contract of the non-finite scan: the index of the first NaN or Inf of a float buffer. The
// tape's gradient check and the trainer scan every gradient of every step, so the CPU kernel
// tests blocks of 1024 with a vectorised, branch-free exponent test and searches only a block
// that holds a non-finite value element by element. No arithmetic: every implementation returns
// the same index. The kernel-table entry is the batched scan (first_non_finite_each), which
// answers for many buffers at once: on the GPU, one wait for the device per step instead of one
// per gradient; a single buffer is a batch of one.
#pragma once
#include <cstdint>

namespace dt::kernels {

/// One buffer of a batched scan: p[0 .. n) (device memory for cuda::).
struct ScanBuffer {
    const float* p = nullptr;
    int64_t n = 0;
};

namespace ref {
inline int64_t first_non_finite(const float* p, int64_t n);
}  // namespace ref

namespace cpu {
/// Index of the first NaN or Inf in p[0 .. n), or -1.
int64_t first_non_finite(const float* p, int64_t n);
/// first[i] = first_non_finite(b[i].p, b[i].n) for i < count.
void first_non_finite_each(const ScanBuffer* b, int64_t count, int64_t* first);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
void first_non_finite_each(const ScanBuffer* b, int64_t count, int64_t* first);
}  // namespace cuda

}  // namespace dt::kernels
