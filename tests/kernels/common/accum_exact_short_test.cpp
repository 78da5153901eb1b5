// SPDX-License-Identifier: MIT
// Pins kernels/common/accum_exact_short.h: exact_sum_of gives exact_value's bits (an ExactAcc of
// the same terms) for short sums of every exponent span around the double path's limit, with
// cancellation, subnormals, zeros, ties, overflow and the special values; the double path is
// taken exactly when the span allows it, and where the double sum would round twice (a sum just
// above a float tie whose last bit double cannot hold) the ExactAcc gives the answer. Streaming
// into an ExactAcc (exact_stream_add) leaves the same normalised limbs and flags as exact_add of
// every term.
#include "kernels/common/accum_exact_short.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels::common {
namespace {

using test::bits;

float exact_of(const std::vector<float>& x) {
    ExactAcc a;
    exact_init(a);
    for (float v : x) exact_add(a, v);
    return exact_value(a);
}

float short_of(const std::vector<float>& x, bool* took_double = nullptr) {
    ExactShort s;
    exact_short_init(s);
    for (float v : x) exact_short_add(s, v);
    if (took_double != nullptr) *took_double = exact_short_exact(s);
    return exact_sum_of([&](auto&& add) {
        for (float v : x) add(v);
    });
}

/// A float with a random full 24-bit mantissa, random sign and biased exponent e.
float full_mantissa(std::mt19937_64& rng, uint32_t e) {
    const uint32_t m = static_cast<uint32_t>(rng()) & 0x7fffffu;
    const uint32_t sign = static_cast<uint32_t>(rng() & 1u) << 31;
    return kernels::common::bits_to_float(sign | (e << 23) | m);
}

TEST(AccumExactShort, EqualsTheExactAccAroundTheSpanLimit) {
    // count terms with exponents spread over [e0, e0 + span]: spans up to the limit take the
    // double path (checked), wider ones the ExactAcc; every result is exact_value's.
    std::mt19937_64 rng(test::test_seed() + 11);
    for (int count : {2, 3, 9, 25, 128, 200}) {
        const int limit = 29 - exact_short_head(count);
        for (int span = 0; span <= limit + 6; ++span) {
            for (int trial = 0; trial < 300; ++trial) {
                const uint32_t e0 = 60 + static_cast<uint32_t>(rng() % 100);
                std::vector<float> x(static_cast<std::size_t>(count));
                for (float& v : x)
                    v = full_mantissa(rng, e0 + static_cast<uint32_t>(rng() % (span + 1)));
                x[0] = full_mantissa(rng, e0), x[1] = full_mantissa(rng, e0 + span);  // the span
                if (trial % 3 == 0) x[2 % count] = -x[0];  // cancellation
                bool took_double = false;
                const float got = short_of(x, &took_double);
                ASSERT_EQ(bits(got), bits(exact_of(x))) << count << " terms, span " << span;
                ASSERT_EQ(took_double, span <= limit) << count << " terms, span " << span;
            }
        }
    }
}

TEST(AccumExactShort, DoubleRoundingIsLeftToTheExactAcc) {
    // 1 + 2^-24 + 2^-60 lies just above the float tie 1 + 2^-24: exact_value rounds it up to
    // 1 + 2^-23, while a double keeps 1 + 2^-24 and its float conversion rounds the tie to even.
    const std::vector<float> x = {1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -60)};
    const double dsum = (1.0 + std::ldexp(1.0, -24)) + std::ldexp(1.0, -60);
    ASSERT_NE(bits(static_cast<float>(dsum)), bits(exact_of(x)));  // the trap is real
    bool took_double = true;
    EXPECT_EQ(bits(short_of(x, &took_double)), bits(std::nextafter(1.0f, 2.0f)));
    EXPECT_FALSE(took_double);
}

TEST(AccumExactShort, ZerosTiesSubnormalsOverflowAndSpecials) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
    const float max = std::numeric_limits<float>::max(), tiny = std::ldexp(1.0f, -149);
    const std::vector<std::vector<float>> cases = {
        {},
        {-0.0f},
        {-0.0f, -0.0f},
        {3.5f, -3.5f},
        {1.0f, std::ldexp(1.0f, -24)},                        // a tie: to even (1)
        {std::nextafter(1.0f, 2.0f), std::ldexp(1.0f, -24)},  // a tie: to even (up)
        {tiny, tiny, -tiny, std::ldexp(1.0f, -130)},          // subnormals
        {std::ldexp(1.0f, -126), -tiny},                      // to the largest subnormal
        {max, max},                                           // overflow: +inf
        {-max, -max, max},                                    // back in range
        {max, std::ldexp(1.0f, 103)},                         // the RNE overflow threshold
        {max, std::ldexp(1.0f, 102)},                         // just below it
        {1.0f, inf},
        {-inf, 2.0f},
        {inf, -inf},
        {nan, 1.0f},
    };
    for (const std::vector<float>& x : cases) {
        const float want = exact_of(x);
        EXPECT_EQ(bits(short_of(x)), bits(want)) << x.size() << " terms, want " << want;
    }
}

TEST(AccumExactShort, EachRunsOnceOnTheDoublePathTwiceOtherwise) {
    int runs = 0;
    const auto each = [&](const std::vector<float>& x) {
        return [&runs, x](auto&& add) {
            ++runs;
            for (float v : x) add(v);
        };
    };
    EXPECT_EQ(exact_sum_of(each({1.0f, 2.0f, 3.0f})), 6.0f);
    EXPECT_EQ(runs, 1);
    runs = 0;
    (void)exact_sum_of(each({1.0f, std::ldexp(1.0f, -40)}));
    EXPECT_EQ(runs, 2);
}

/// The normalised limbs and flags of an accumulator of x: every term by exact_add, or streamed.
ExactAcc accumulated(const std::vector<float>& x, bool stream) {
    ExactAcc a;
    ExactShort seg;
    exact_init(a);
    exact_short_init(seg);
    for (float v : x) stream ? exact_stream_add(a, seg, v) : exact_add(a, v);
    exact_stream_flush(a, seg);
    exact_normalise(a);
    return a;
}

void expect_same_accumulator(const std::vector<float>& x, const char* what) {
    const ExactAcc want = accumulated(x, false), got = accumulated(x, true);
    for (int k = 0; k < kExactLimbs; ++k)
        ASSERT_EQ(got.limb[k], want.limb[k]) << what << ", " << x.size() << " terms, limb " << k;
    ASSERT_EQ(got.special, want.special) << what;
}

TEST(AccumExactShort, StreamingGivesTheSameAccumulator) {
    // Rows as the exact leaves see them: full mantissas over spans at and past a segment's
    // limit (a looser limit would round a segment's double sum), rows longer than a segment,
    // zeros, subnormals, the top binades and the special values mixed in.
    std::mt19937_64 rng(test::test_seed() + 12);
    for (int32_t span : {0, 5, kExactSegmentSpan, kExactSegmentSpan + 1, 40, 200}) {
        for (int trial = 0; trial < 200; ++trial) {
            const int n = 1 + static_cast<int>(rng() % 700);
            const uint32_t e0 = 1 + static_cast<uint32_t>(rng() % (246 - std::min(span, 200)));
            std::vector<float> x(static_cast<std::size_t>(n));
            for (float& v : x) {
                const uint32_t e =
                    std::min<uint32_t>(e0 + static_cast<uint32_t>(rng() % (span + 1)), 254);
                v = full_mantissa(rng, e);
            }
            expect_same_accumulator(x, "spread");
        }
    }
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> mixed = {0.0f,
                                -0.0f,
                                1e-45f,
                                -3e-39f,
                                1.0f,
                                3e38f,
                                -3e38f,
                                2e37f,
                                std::ldexp(1.0f, 120),
                                std::ldexp(1.0f, 121),
                                5.0f};
    for (int i = 0; i < 300; ++i) mixed.push_back(std::ldexp(1.0f + i, -(i % 50)));
    expect_same_accumulator(mixed, "mixed");
    std::vector<float> top(200, std::numeric_limits<float>::max());  // straight in: 2^128 * 200
    expect_same_accumulator(top, "top binade");
    mixed.push_back(inf);
    expect_same_accumulator(mixed, "+inf");
    mixed.push_back(-inf);
    expect_same_accumulator(mixed, "+-inf");
    mixed.push_back(std::nanf(""));
    expect_same_accumulator(mixed, "nan");
}

TEST(AccumExactShort, StreamingStaysExactAtTheEdgeOfTheSegmentLimits) {
    // Segments of kExactSegment terms M * 2^L, then 127 times M * 2^(L + span) (M = 2^24 - 1,
    // span = kExactSegmentSpan): every partial sum M * (1 + k * 2^span) is odd in units of 2^L,
    // and the last needs 24 + 7 + span = 53 bits, all that a double holds (a span one wider
    // would round it; a flush that dropped its third float would lose its low bits).
    const float m = 16777215.0f;
    std::vector<float> x;
    for (int rep = 0; rep < 3; ++rep) {
        x.push_back(std::ldexp(m, -60));
        for (int64_t k = 1; k < kExactSegment; ++k)
            x.push_back(std::ldexp(m, -60 + kExactSegmentSpan));
    }
    expect_same_accumulator(x, "edge");
}

}  // namespace
}  // namespace dt::kernels::common
