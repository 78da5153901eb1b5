// SPDX-License-Identifier: MIT
// GELU on the CPU: the contract's element functions over fixed static blocks (no reduction, so
// neither the split nor the thread count changes a bit).
#include "kernels/gelu.h"

namespace dt::kernels::cpu {

void gelu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_forward_element(x[i]);
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; ++i) dx[i] = gelu_backward_element(x[i], dy[i]);
}

}  // namespace dt::kernels::cpu
