// SPDX-License-Identifier: MIT
// Canary for the numeric build flags (cmake/dt_options.cmake): the compiler must not contract
// a*b + c into a fused multiply-add, because the recipes in kernels/ name every rounding. It sees
// only its own file's compile (and a Release build without FMA instructions could not contract
// here anyway); tests/e2e/numeric_flags_test.py checks the flags of every compile of the build.
#include <gtest/gtest.h>

#include <cmath>

namespace {

TEST(NumericFlags, NoFloatContraction) {
    // a*b = 1 + 2^-11 + 2^-24 needs 25 bits: rounded to float it loses 2^-24, so a*b - c with
    // c = 1 + 2^-11 is 0 when rounded separately and 2^-24 when fused.
    volatile float a = 1.0f + 0x1p-12f;
    volatile float b = 1.0f + 0x1p-12f;
    volatile float c = 1.0f + 0x1p-11f;
    float unfused = a * b - c;
    float fused = std::fma(static_cast<float>(a), static_cast<float>(b), -static_cast<float>(c));
    EXPECT_EQ(fused, 0x1p-24f);
    EXPECT_EQ(unfused, 0.0f) << "a*b - c was contracted into an fma: check -ffp-contract=off";
}

}  // namespace
