// SPDX-License-Identifier: MIT
// Dropout on the CPU; mask recipe and ORDER in kernels/dropout.h. Each iteration owns one group
// of 4 elements of one sample (one Philox draw), so nothing depends on the thread count.
#include "kernels/dropout.h"

#include "kernels/common/philox.h"

namespace dt::kernels::cpu {

void dropout_forward(const float* x, const int64_t* sample_ids, float* y, uint8_t* mask,
                     const DropoutParams& p) {
    using namespace dt::kernels::common;
    const float scale = dropout_scale(p.p);
    const int64_t groups = (p.D + 3) / 4;  // draws per sample
#pragma omp parallel for schedule(static) if (p.N * p.D >= 16384)
    for (int64_t g = 0; g < p.N * groups; ++g) {
        const int64_t n = g / groups, q = g % groups;
        const uint64_t index =
            (static_cast<uint64_t>(sample_ids[n]) << 32) | static_cast<uint64_t>(q);
        const Philox4 r = philox_draw(p.seed, RngStream::kDropout, index, p.sub);
        const int64_t j0 = q * 4, j1 = j0 + 4 < p.D ? j0 + 4 : p.D;
        for (int64_t j = j0; j < j1; ++j) {
            const int64_t k = n * p.D + j;
            const bool dropped = uniform01(r.v[j - j0]) < p.p;
            mask[k] = dropped ? 0 : 1;
            y[k] = dropped ? 0.0f : x[k] * scale;  // ORDER: x * scale
        }
    }
}

void dropout_backward(const float* dy, const uint8_t* mask, float* dx, const DropoutParams& p) {
    const float scale = dropout_scale(p.p);
    const int64_t n = p.N * p.D;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) dx[i] = mask[i] ? dy[i] * scale : 0.0f;  // ORDER: dy * scale
}

}  // namespace dt::kernels::cpu
