// SPDX-License-Identifier: MIT
// Contract of the ReLU kernels: y = max(x, 0); dx = dy where x > 0, else 0.
// Numeric recipe: elementwise, no reduction, so every implementation is bitwise identical.
// NaN propagates: relu(NaN) = NaN (x is kept unless x <= 0), as in PyTorch.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels {

/// The recipe per element (host-device): x itself or +0 (NaN kept); dy itself or +0.
DT_HD float relu_forward_element(float x) { return x <= 0.0f ? 0.0f : x; }
DT_HD float relu_backward_element(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

namespace ref {
inline void relu_forward(const double* x, double* y, int64_t n);
inline void relu_backward(const double* x, const double* dy, double* dx, int64_t n);
}  // namespace ref

namespace cpu {
void relu_forward(const float* x, float* y, int64_t n);                    // (n) -> (n)
void relu_backward(const float* x, const float* dy, float* dx, int64_t n);  // (n),(n) -> (n)
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
void relu_forward(const float* x, float* y, int64_t n);
void relu_backward(const float* x, const float* dy, float* dx, int64_t n);
}  // namespace cuda

}  // namespace dt::kernels
