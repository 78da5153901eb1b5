// SPDX-License-Identifier: MIT
// Exact accumulators for tests of what rounds them: accumulator i holds up to 12 terms of
// magnitudes 2^-149 .. 2^127 and both signs (cancellations, subnormal and overflowing totals),
// left unnormalised; every 97th also holds an infinity or a NaN. Keyed by (seed, index).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/philox.h"

namespace dt::test {

inline std::vector<kernels::common::ExactAcc> random_exact_accs(int64_t n, uint64_t seed) {
    namespace c = kernels::common;
    std::vector<c::ExactAcc> accs(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        c::ExactAcc& a = accs[static_cast<std::size_t>(i)];
        c::exact_init(a);
        const c::Philox4 h = c::philox_draw(seed, c::RngStream::kTest, static_cast<uint64_t>(i), 1);
        const int terms = static_cast<int>(h.v[0] % 13);
        const int base = static_cast<int>(h.v[1] % 277) - 149;  // the binade the terms centre on
        for (int k = 0; k < terms; ++k) {
            const c::Philox4 r =
                c::philox_draw(seed, c::RngStream::kTest, static_cast<uint64_t>(i), 2 + k);
            const int e = std::min(127, std::max(-149, base + static_cast<int>(r.v[1] % 9) - 4));
            float v = std::ldexp(1.0f + c::uniform01(r.v[0]), e);
            if (r.v[2] % 2) v = -v;
            c::exact_add(a, v);
        }
        if (i % 97 == 5)
            c::exact_add(a, (i / 97) % 2 ? std::numeric_limits<float>::infinity() : std::nanf(""));
    }
    return accs;
}

}  // namespace dt::test
