// SPDX-License-Identifier: MIT
// Accuracy and special cases of kernels/common/fast_math.h against std::exp / std::log in double.
// Error is measured in float ulps of the exact value (the ulp of a subnormal result is 2^-149).
// The sweeps visit every 509th float bit pattern of the useful range plus the grid k * 2^-18 on
// [-1, 1) (exp) and (0, 2) (log), ~10M points. An exhaustive run over all 2^32 floats (done once
// by hand) measured max 0.99 ulp for exp and 0.83 ulp for log.
#include "kernels/common/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/support/compare.h"

namespace dt::kernels::common {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kMaxUlp = 2.0;

double float_ulp(double v) {
    v = std::fabs(v);
    if (v < 0x1p-126) return 0x1p-149;
    int e = 0;
    std::frexp(v, &e);
    return std::ldexp(1.0, e - 24);
}

double ulp_error(float got, double exact) {
    return std::fabs(static_cast<double>(got) - exact) / float_ulp(exact);
}

struct Worst {
    double err = 0.0;
    float at = 0.0f;
    void see(double e, float x) {
        if (e > err || std::isnan(e)) {
            err = std::isnan(e) ? 1e30 : e;
            at = x;
        }
    }
};

void sweep_exp(uint32_t lo_bits, uint32_t hi_bits, uint32_t step, Worst& w) {
    for (uint64_t b = lo_bits; b <= hi_bits; b += step) {
        float x = bits_to_float(static_cast<uint32_t>(b));
        w.see(ulp_error(dt_expf(x), std::exp(static_cast<double>(x))), x);
    }
}

TEST(FastMath, ExpSweepWithin2Ulp) {
    Worst w;
    // Positive x up to the overflow threshold, negative x down to -104 (deep subnormals).
    sweep_exp(0u, float_to_bits(88.72283172607421875f), 509, w);
    sweep_exp(0x80000000u, float_to_bits(-104.0f), 509, w);
    for (int i = -(1 << 18); i < (1 << 18); ++i) {
        float x = static_cast<float>(i) * 0x1p-18f;
        w.see(ulp_error(dt_expf(x), std::exp(static_cast<double>(x))), x);
    }
    EXPECT_LE(w.err, kMaxUlp) << "worst x = " << w.at << " (" << std::hexfloat << w.at << ")";
}

TEST(FastMath, LogSweepWithin2Ulp) {
    Worst w;
    for (uint64_t b = 1; b < 0x7f800000u; b += 509) {  // every positive finite float class
        float x = bits_to_float(static_cast<uint32_t>(b));
        w.see(ulp_error(dt_logf(x), std::log(static_cast<double>(x))), x);
    }
    for (int i = 1; i < (1 << 19); ++i) {  // (0, 2) densely, in particular around 1
        float x = static_cast<float>(i) * 0x1p-18f;
        w.see(ulp_error(dt_logf(x), std::log(static_cast<double>(x))), x);
    }
    EXPECT_LE(w.err, kMaxUlp) << "worst x = " << w.at << " (" << std::hexfloat << w.at << ")";
}

TEST(FastMath, ExpSpecialCases) {
    EXPECT_EQ(test::bits(dt_expf(0.0f)), test::bits(1.0f));
    EXPECT_EQ(test::bits(dt_expf(-0.0f)), test::bits(1.0f));
    EXPECT_EQ(dt_expf(kInf), kInf);
    EXPECT_EQ(test::bits(dt_expf(-kInf)), test::bits(0.0f));
    EXPECT_TRUE(std::isnan(dt_expf(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(dt_expf(88.72283935546875f), kInf);  // first float whose exp overflows
    EXPECT_EQ(dt_expf(1000.0f), kInf);
    EXPECT_TRUE(std::isfinite(dt_expf(88.72283172607421875f)));
    EXPECT_EQ(test::bits(dt_expf(-104.0f)), test::bits(0.0f));
    EXPECT_EQ(test::bits(dt_expf(-1000.0f)), test::bits(0.0f));
    // Subnormal results: exp(-100) = 3.72e-44 is 26.6 * 2^-149.
    float sub = dt_expf(-100.0f);
    EXPECT_GT(sub, 0.0f);
    EXPECT_LT(sub, 0x1p-126f);
    EXPECT_LE(ulp_error(sub, std::exp(-100.0)), 1.0);
    EXPECT_LE(ulp_error(dt_expf(1.0f), std::exp(1.0)), 1.0);
}

TEST(FastMath, LogSpecialCases) {
    EXPECT_EQ(test::bits(dt_logf(1.0f)), test::bits(0.0f));
    EXPECT_EQ(dt_logf(0.0f), -kInf);
    EXPECT_EQ(dt_logf(-0.0f), -kInf);
    EXPECT_EQ(dt_logf(kInf), kInf);
    EXPECT_TRUE(std::isnan(dt_logf(-1.0f)));
    EXPECT_TRUE(std::isnan(dt_logf(-kInf)));
    EXPECT_TRUE(std::isnan(dt_logf(-0x1p-149f)));
    EXPECT_TRUE(std::isnan(dt_logf(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(test::bits(dt_logf(2.0f)), test::bits(0.6931471805599453f));
    // Subnormal and extreme inputs.
    EXPECT_LE(ulp_error(dt_logf(0x1p-149f), std::log(0x1p-149)), 1.0);
    EXPECT_LE(ulp_error(dt_logf(0x1.8p-140f), std::log(0x1.8p-140)), 1.0);
    EXPECT_LE(ulp_error(dt_logf(std::numeric_limits<float>::max()),
                        std::log(static_cast<double>(std::numeric_limits<float>::max()))),
              1.0);
}

TEST(FastMath, ExpLogRoundTrip) {
    // log(exp(x)) stays within a few ulp of x over the range where both are normal.
    for (int i = -80; i <= 80; ++i) {
        float x = static_cast<float>(i) * 0.97f + 0.013f;
        EXPECT_NEAR(dt_logf(dt_expf(x)), x, 4.0 * float_ulp(x) + 2e-7) << "x = " << x;
    }
}

// dt_expf_select must give dt_expf's bits everywhere: every 17th float (all signs, NaNs and
// infinities among them), and every float within 2^16 steps of each place where a branch of
// dt_expf changes (0, the overflow bound, the clamp at 88.8, the subnormal range, -104).
TEST(FastMath, ExpSelectHasExpBits) {
    auto same = [](uint32_t b) {
        const float x = bits_to_float(b);
        return float_to_bits(dt_expf_select(x)) == float_to_bits(dt_expf(x));
    };
    int64_t bad = 0;
    uint32_t first_bad = 0;
    auto check = [&](uint32_t b) {
        if (!same(b) && bad++ == 0) first_bad = b;
    };
    for (uint64_t b = 0; b <= 0xffffffffu; b += 17) check(static_cast<uint32_t>(b));
    for (const float edge : {0.0f, -0.0f, 88.72283172607421875f, 88.8f, -87.33654f, -103.97f,
                             -104.0f, 1e-30f, -1e-30f}) {
        const auto c = static_cast<int64_t>(float_to_bits(edge));
        for (int64_t d = -(1 << 16); d <= (1 << 16); ++d)
            if (c + d >= 0 && c + d <= 0xffffffffLL) check(static_cast<uint32_t>(c + d));
    }
    EXPECT_EQ(bad, 0) << "first differing input bits 0x" << std::hex << first_bad << " ("
                      << bits_to_float(first_bad) << ")";
}

}  // namespace
}  // namespace dt::kernels::common
