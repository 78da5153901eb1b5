// SPDX-License-Identifier: MIT
// Reproducible test inputs: values come from Philox keyed by (seed, index), so a failing case is
// replayed by its seed alone. The seed is fixed (12345) so every run checks the same inputs;
// --gtest_random_seed=N (or GTEST_RANDOM_SEED=N) explores other inputs. (UnitTest::random_seed()
// is not used: gtest fills it from the clock when the flag is 0, which made runs differ.)
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/common/philox.h"

namespace dt::test {

inline uint64_t test_seed() {
    const int32_t s = GTEST_FLAG_GET(random_seed);
    return s == 0 ? 12345u : static_cast<uint64_t>(s);
}

/// n uniform floats in [lo, hi) keyed by (seed, tag, index).
inline std::vector<float> uniform_floats(int64_t n, float lo, float hi, uint64_t seed,
                                         uint32_t tag = 0) {
    using namespace dt::kernels::common;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        Philox4 r = philox_draw(seed, RngStream::kTest, static_cast<uint64_t>(i), tag);
        v[static_cast<std::size_t>(i)] = lo + (hi - lo) * uniform01(r.v[0]);
    }
    return v;
}

/// n uniform floats in [-1, 1) keyed by (test_seed(), tag, index): the kernels' usual inputs.
inline std::vector<float> signed_uniform(int64_t n, uint32_t tag) {
    return uniform_floats(n, -1.0f, 1.0f, test_seed(), tag);
}

inline std::vector<double> to_double(const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
}

}  // namespace dt::test
