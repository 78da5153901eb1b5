// SPDX-License-Identifier: MIT
// Weight init on the CPU; recipe and ORDER in kernels/init.h. Each element is a function of its
// index alone, so the threads may split the range any way.
#include "kernels/init.h"

namespace dt::kernels::cpu {

void init_uniform(float* v, const InitUniformParams& p) {
#pragma omp parallel for schedule(static) if (p.n >= 16384)
    for (int64_t i = 0; i < p.n; ++i) v[i] = init_uniform_element(i, p);
}

}  // namespace dt::kernels::cpu
