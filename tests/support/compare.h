// SPDX-License-Identifier: MIT
// Comparison helpers for kernel tests: bitwise equality (every NaN one value, the first
// mismatches printed in hex) and closeness to a double-precision reference within a stated bound
// (and the bound's usual form, c * eps32 * the reference sum over |terms|).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "engine/core/nan_bits.h"

namespace dt::test {

inline uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

/// Passes iff a and b have identical bits, every NaN counting as one value (a NaN's payload
/// depends on the hardware: engine/core/nan_bits.h); otherwise lists up to 8 differing indices.
inline ::testing::AssertionResult bitwise_equal(const float* a, const float* b, int64_t n) {
    if (n == 0 || std::memcmp(a, b, static_cast<std::size_t>(n) * 4) == 0) {
        return ::testing::AssertionSuccess();
    }
    std::ostringstream os;
    int shown = 0;
    int64_t diffs = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (same_bits(a[i], b[i])) continue;
        ++diffs;
        if (shown++ < 8) {
            os << "\n  [" << i << "] " << a[i] << " (0x" << std::hex << bits(a[i]) << ") vs "
               << std::dec << b[i] << " (0x" << std::hex << bits(b[i]) << std::dec << ")";
        }
    }
    if (diffs == 0) return ::testing::AssertionSuccess();  // NaNs of other payloads only
    return ::testing::AssertionFailure() << diffs << " of " << n << " elements differ:" << os.str();
}

inline ::testing::AssertionResult bitwise_equal(const std::vector<float>& a,
                                                const std::vector<float>& b) {
    if (a.size() != b.size()) {
        return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
    }
    return bitwise_equal(a.data(), b.data(), static_cast<int64_t>(a.size()));
}

/// Passes iff |got[i] - want[i]| <= bound[i] for all i (bound derived by the caller, e.g.
/// K * eps32 * sum|terms|); otherwise lists up to 8 violations.
inline ::testing::AssertionResult within_bound(const float* got, const double* want,
                                               const double* bound, int64_t n) {
    std::ostringstream os;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        if (err <= bound[i] && !std::isnan(got[i])) continue;
        if (bad++ < 8) {
            os << "\n  [" << i << "] got " << got[i] << " want " << want[i] << " err " << err
               << " > bound " << bound[i];
        }
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << bad << " of " << n << " elements out of bound:" << os.str();
}

/// Same with one scalar bound for every element.
inline ::testing::AssertionResult within_abs(const float* got, const double* want, double bound,
                                             int64_t n) {
    std::vector<double> b(static_cast<std::size_t>(n), bound);
    return within_bound(got, want, b.data(), n);
}

constexpr double kEps32 = 1.0 / 8388608.0;  // 2^-23, float32 machine epsilon

/// Same with the bound rel * max|want| (+ 1e-30, so that an all-zero want passes only +-0):
/// closeness relative to the largest reference magnitude, for n = want.size() elements.
inline ::testing::AssertionResult within_rel_of_max(const float* got,
                                                    const std::vector<double>& want, double rel) {
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    return within_abs(got, want.data(), rel * scale + 1e-30, static_cast<int64_t>(want.size()));
}

/// |v[i]| in double: the inputs whose reference sums are the sum over |terms| of a bound.
inline std::vector<double> absd(const std::vector<float>& v) {
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(static_cast<double>(v[i]));
    return out;
}

/// The bound c * eps32 * mag[i] from those sums (c: terms per sum plus the combining depth).
inline std::vector<double> eps_scaled(std::vector<double> mag, double c) {
    for (auto& x : mag) x *= c * kEps32;
    return mag;
}

/// A device's output against the cpu's: bitwise, or, when `close` (the atomic mode, whose bits
/// are not fixed on either device), within 1e-3 * (|want| + 1) element by element.
inline void expect_bits_or_close(const std::vector<float>& got, const std::vector<float>& want,
                                 bool close, const char* what) {
    SCOPED_TRACE(what);
    ASSERT_EQ(got.size(), want.size());
    if (!close) {
        EXPECT_TRUE(bitwise_equal(got.data(), want.data(), static_cast<int64_t>(got.size())));
        return;
    }
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-3f * (std::fabs(want[i]) + 1.0f)) << i;
}

}  // namespace dt::test
