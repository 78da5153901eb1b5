// SPDX-License-Identifier: MIT
// The `atomic` accumulation mode: threads add into shared float outputs with atomic adds.
//
// THIS IS THE INTENTIONALLY NONDETERMINISTIC PATH. Each single add is atomic (no update is
// lost), but the order in which threads' adds land is decided by the scheduler / the hardware,
// and float addition is not associative, so the rounded result can change from run to run. It
// exists to reproduce the "noise" of frameworks that use atomics (cuDNN/cuBLAS split-K,
// index_add, scatter_add); every other mode is deterministic. There is no ORDER: here on purpose.
//
// Host: a compare-and-swap loop on the float (GCC/Clang generic __atomic builtins, so it
// also compiles in nvcc's C++17 host pass, where std::atomic_ref is not available); relaxed
// ordering: the kernel's join (end of the OpenMP region / kernel launch) publishes the results.
// Device: atomicAdd (round to nearest even on every architecture detrain targets).
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// *p += v atomically; returns the old value. Nondeterministic summation order (see above).
DT_HD float atomic_add_float(float* p, float v) {
#if defined(__CUDA_ARCH__)
    return atomicAdd(p, v);
#else
    // Generic __atomic builtins on the float itself: no aliasing cast; the compare is bitwise.
    float old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    for (;;) {
        float desired = old + v;
        // On failure `old` is refreshed with the current value and the add is redone.
        if (__atomic_compare_exchange(p, &old, &desired, /*weak=*/true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
            return old;
        }
    }
#endif
}

/// out[i] += x[i * stride] atomically for i in [0, n) (each element separately).
DT_HD void atomic_add_row(float* out, const float* x, int64_t n, int64_t stride = 1) {
    for (int64_t i = 0; i < n; ++i) atomic_add_float(out + i, x[i * stride]);
}

}  // namespace dt::kernels::common
