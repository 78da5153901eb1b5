// SPDX-License-Identifier: MIT
// Contract of the ReLU kernels: y = max(x, 0); dx = dy where x > 0, else 0.
// Numeric recipe: elementwise, no reduction, so every implementation is bitwise identical.
// NaN propagates: relu(NaN) = NaN (x is kept unless x <= 0), as in PyTorch.
#pragma once
#include <cstdint>

namespace dt::kernels {

namespace ref {
inline void relu_forward(const double* x, double* y, int64_t n);
inline void relu_backward(const double* x, const double* dy, double* dx, int64_t n);
}  // namespace ref

namespace cpu {
void relu_forward(const float* x, float* y, int64_t n);                    // (n) -> (n)
void relu_backward(const float* x, const float* dy, float* dx, int64_t n);  // (n),(n) -> (n)
}  // namespace cpu

}  // namespace dt::kernels
