// SPDX-License-Identifier: MIT
// Elementwise add on the CPU, split in fixed static blocks (no reduction, order irrelevant).
#include "kernels/add.h"

namespace dt::kernels::cpu {

void add_forward(const float* a, const float* b, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];  // ORDER: a + b
}

}  // namespace dt::kernels::cpu
