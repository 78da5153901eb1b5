// SPDX-License-Identifier: MIT
// ReLU on the CPU: elementwise, split in fixed static blocks (no reduction, order irrelevant).
#include "kernels/relu.h"

namespace dt::kernels::cpu {

void relu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] <= 0.0f ? 0.0f : x[i];
}

void relu_backward(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace dt::kernels::cpu
