// SPDX-License-Identifier: MIT
// Reference weight init in double precision: the same Philox draw per element as kernels/init.h,
// the value (2u - 1) * bound computed in double (exact there: a 25-bit by a 24-bit significand),
// so the float kernels must equal it rounded to float, bit for bit.
#pragma once
#include "kernels/common/philox.h"
#include "kernels/init.h"

namespace dt::kernels::ref {

inline void init_uniform(double* v, const InitUniformParams& p) {
    using namespace dt::kernels::common;
    for (int64_t i = 0; i < p.n; ++i) {
        const Philox4 r = philox_draw(p.seed, RngStream::kInit, static_cast<uint64_t>(i), p.sub);
        const double u = static_cast<double>(r.v[0] >> 8) / 16777216.0;
        v[i] = (2.0 * u - 1.0) * static_cast<double>(p.bound);
    }
}

}  // namespace dt::kernels::ref
