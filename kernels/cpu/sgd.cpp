// SPDX-License-Identifier: MIT
// SGD update on the CPU (recipe in kernels/sgd.h): fixed blocks of elements split statically over
// the threads. Elements are independent, so the split cannot change a bit.
#include <algorithm>

#include "kernels/sgd.h"

namespace dt::kernels::cpu {

namespace {

/// The elementwise pass over [lo, hi); q by value, so its fields are loop invariants the
/// vectoriser can see (no store through p, grad or buf can change them).
void sgd_range(const SgdParams q, float* p, const float* grad, float* buf, int64_t lo,
               int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) sgd_update_element(k, p, grad, buf, q);
}

}  // namespace

void sgd_update(float* p, const float* grad, float* buf, const SgdParams& q) {
    const int64_t n = q.n;
    constexpr int64_t kBlock = 4096;  // elements per work item
    const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
    for (int64_t bk = 0; bk < blocks; ++bk)
        sgd_range(q, p, grad, buf, bk * kBlock, std::min(n, (bk + 1) * kBlock));
}

void sgd_update_each(const SgdTensor* t, int64_t count) {
    for (int64_t i = 0; i < count; ++i) sgd_update(t[i].p, t[i].grad, t[i].buf, t[i].q);
}

}  // namespace dt::kernels::cpu
