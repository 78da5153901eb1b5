// SPDX-License-Identifier: MIT
// Dropout on the CPU; mask recipe and ORDER in kernels/dropout.h. Each iteration owns one group
// of 4 elements of one sample (one Philox draw), so nothing depends on the thread count.
#include "kernels/dropout.h"


namespace dt::kernels::cpu {

void dropout_forward(const float* x, const int64_t* sample_ids, float* y, uint8_t* mask,
                     const DropoutParams& p) {
    const float scale = dropout_scale(p.p);
    const int64_t groups = dropout_groups(p);
#pragma omp parallel for schedule(static) if (p.N * p.D >= 16384)
    for (int64_t g = 0; g < p.N * groups; ++g)
        dropout_forward_group(g, x, sample_ids, y, mask, p, scale);
}

void dropout_backward(const float* dy, const uint8_t* mask, float* dx, const DropoutParams& p) {
    const float scale = dropout_scale(p.p);
    const int64_t n = p.N * p.D;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) dx[i] = dropout_backward_element(dy[i], mask[i], scale);
}

}  // namespace dt::kernels::cpu
