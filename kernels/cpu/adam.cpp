// SPDX-License-Identifier: MIT
// Adam / AdamW update on the CPU (recipe in kernels/adam.h): fixed blocks of whole vectors
// split statically over the threads. Elements are independent, so neither the split nor the
// vector path (DT_ISA_VARIANTS) changes a bit: every operation is one IEEE-754 float
// operation (-ffp-contract=off, sqrt correctly rounded).
#include <algorithm>

#include "kernels/adam.h"
#include "kernels/cpu/isa_variants.h"

namespace dt::kernels::cpu {

namespace {

/// The elementwise pass over [lo, hi).
DT_ISA_BODY void adam_range_body(const AdamParams& q, const float* __restrict grad,
                                 float* __restrict p, float* __restrict m, float* __restrict v,
                                 int64_t lo, int64_t hi) {
    const AdamParams local = q;  // a local copy: its loads hoist out of the vector loop
    for (int64_t k = lo; k < hi; ++k) adam_update_element(k, p, grad, m, v, local);
}
DT_ISA_VARIANTS(void, adam_range,
                (const AdamParams& q, const float* __restrict grad, float* __restrict p,
                 float* __restrict m, float* __restrict v, int64_t lo, int64_t hi),
                (q, grad, p, m, v, lo, hi))

}  // namespace

void adam_update(float* p, const float* grad, float* m, float* v, const AdamParams& q) {
    const int64_t n = q.n;
    constexpr int64_t kBlock = 4096;  // elements per work item (whole vectors)
    const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
    for (int64_t bk = 0; bk < blocks; ++bk)
        adam_range(q, grad, p, m, v, bk * kBlock, std::min(n, (bk + 1) * kBlock));
}

void adam_update_each(const AdamTensor* t, int64_t count) {
    for (int64_t i = 0; i < count; ++i) adam_update(t[i].p, t[i].grad, t[i].m, t[i].v, t[i].q);
}

}  // namespace dt::kernels::cpu
