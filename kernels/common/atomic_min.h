// SPDX-License-Identifier: MIT
// Atomic minimum of an unsigned 64-bit integer. Unlike a float sum, the minimum of a set does not
// depend on the order its members arrive in, so kernels that race to record "the first index
// where ..." stay deterministic.
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// *p = min(*p, v) atomically.
DT_HD void atomic_min_u64(unsigned long long* p, unsigned long long v) {
#if defined(__CUDA_ARCH__)
    atomicMin(p, v);
#else
    unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old &&
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
#endif
}

}  // namespace dt::kernels::common
