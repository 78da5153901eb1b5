// SPDX-License-Identifier: MIT
// Atomic maximum of an unsigned 64-bit integer. Unlike a float sum, the maximum of a set does not
// depend on the order its members arrive in, so kernels that race to record "the first index
// where ..." (encoded so that the first is the largest, kernels/finite.h) stay deterministic.
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// *p = max(*p, v) atomically.
DT_HD void atomic_max_u64(unsigned long long* p, unsigned long long v) {
#if defined(__CUDA_ARCH__)
    atomicMax(p, v);
#else
    unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old &&
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
#endif
}

}  // namespace dt::kernels::common
