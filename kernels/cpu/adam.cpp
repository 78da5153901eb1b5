// SPDX-License-Identifier: MIT
// Adam / AdamW update on the CPU (recipe in kernels/adam.h): fixed blocks of whole vectors
// split statically over the threads. Elements are independent, so neither the split nor the
// vector clone (DT_TARGET_CLONES) changes a bit: every operation is one IEEE-754 float
// operation (-ffp-contract=off, sqrt correctly rounded).
#include <algorithm>
#include <cmath>

#include "kernels/adam.h"
#include "kernels/cpu/target_clones.h"

namespace dt::kernels::cpu {

namespace {

/// The elementwise pass over [lo, hi).
DT_TARGET_CLONES void adam_range(const AdamParams& q, const float* __restrict grad,
                                 float* __restrict p, float* __restrict m, float* __restrict v,
                                 int64_t lo, int64_t hi) {
    const float b1 = q.b1, b2 = q.b2, k1 = q.k1, k2 = q.k2, c2s = q.c2s, eps = q.eps;
    const float neg_step = q.neg_step, wd = q.wd, decay = q.decay;
    const bool l2 = wd != 0.0f && !q.decoupled, decoupled = wd != 0.0f && q.decoupled;
    for (int64_t k = lo; k < hi; ++k) {
        float g = grad[k];
        float pk = p[k];
        if (decoupled) pk = pk * decay;  // ORDER: AdamW decay before the Adam step
        if (l2) g = g + wd * pk;         // ORDER: L2 term rounded, then added
        const float mk = m[k] * b1 + k1 * g;            // ORDER: (m*b1) + (k1*g)
        const float vk = v[k] * b2 + (k2 * g) * g;      // ORDER: (v*b2) + ((k2*g)*g)
        const float denom = std::sqrt(vk) / c2s + eps;  // ORDER: (sqrt(v)/c2s) + eps
        m[k] = mk;
        v[k] = vk;
        p[k] = pk + (neg_step * mk) / denom;  // ORDER: pk + ((-step_size*m)/denom)
    }
}

}  // namespace

void adam_update(float* p, const float* grad, float* m, float* v, const AdamParams& q) {
    const int64_t n = q.n;
    constexpr int64_t kBlock = 4096;  // elements per work item (whole vectors)
    const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
    for (int64_t bk = 0; bk < blocks; ++bk)
        adam_range(q, grad, p, m, v, bk * kBlock, std::min(n, (bk + 1) * kBlock));
}

}  // namespace dt::kernels::cpu
