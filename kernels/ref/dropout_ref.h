// SPDX-License-Identifier: MIT
// Reference dropout in double precision: the same integer mask as kernels/dropout.h (Philox is
// exact), one draw per element (deliberately naive), values scaled by 1 / (1 - p) in double.
#pragma once
#include "kernels/common/philox.h"
#include "kernels/dropout.h"

namespace dt::kernels::ref {

inline void dropout_forward(const double* x, const int64_t* sample_ids, double* y, uint8_t* mask,
                            const DropoutParams& p) {
    using namespace dt::kernels::common;
    const double scale = 1.0 / (1.0 - static_cast<double>(p.p));
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t j = 0; j < p.D; ++j) {
            uint64_t index = (static_cast<uint64_t>(sample_ids[n]) << 32) |
                             static_cast<uint64_t>(j / 4);
            Philox4 r = philox_draw(p.seed, RngStream::kDropout, index, p.sub);
            bool dropped = uniform01(r.v[j % 4]) < p.p;
            mask[n * p.D + j] = dropped ? 0 : 1;
            y[n * p.D + j] = dropped ? 0.0 : x[n * p.D + j] * scale;
        }
}

inline void dropout_backward(const double* dy, const uint8_t* mask, double* dx,
                             const DropoutParams& p) {
    const double scale = 1.0 / (1.0 - static_cast<double>(p.p));
    for (int64_t i = 0; i < p.N * p.D; ++i) dx[i] = mask[i] ? dy[i] * scale : 0.0;
}

}  // namespace dt::kernels::ref
