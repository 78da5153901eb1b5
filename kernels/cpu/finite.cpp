// SPDX-License-Identifier: MIT
// The non-finite scan on the CPU (kernels/finite.h): blocks of kBlock floats are tested with a
// branch-free exponent check (vectorised on the AVX-512 and AVX2 paths: DT_ISA_VARIANTS); only a block holding a
// NaN or Inf is searched element by element.
#include "kernels/finite.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/isa_variants.h"

namespace dt::kernels::cpu {

namespace {

constexpr int64_t kBlock = 1024;

/// True when a float of p[0 .. n) has all exponent bits set (NaN or Inf). Branch-free.
DT_ISA_BODY bool block_has_non_finite_body(const float* p, int64_t n) {
    uint32_t any = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        std::memcpy(&bits, p + i, sizeof bits);
        any |= static_cast<uint32_t>(non_finite_bits(bits));
    }
    return any != 0;
}
DT_ISA_VARIANTS(bool, block_has_non_finite, (const float* p, int64_t n), (p, n))

}  // namespace

int64_t first_non_finite(const float* p, int64_t n) {
    for (int64_t lo = 0; lo < n; lo += kBlock) {
        const int64_t hi = std::min(n, lo + kBlock);
        if (!block_has_non_finite(p + lo, hi - lo)) continue;
        for (int64_t i = lo; i < hi; ++i)
            if (!std::isfinite(p[i])) return i;
    }
    return -1;
}

void first_non_finite_each(const ScanBuffer* b, int64_t count, uint64_t* words) {
    for (int64_t k = 0; k < count; ++k) {
        const int64_t i = first_non_finite(b[k].p, b[k].n);
        if (i < 0) continue;
        const uint64_t mark = non_finite_mark(i, common::float_to_bits(b[k].p[i]));
        if (mark > words[k]) words[k] = mark;
    }
}

}  // namespace dt::kernels::cpu
