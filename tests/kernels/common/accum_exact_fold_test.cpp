// SPDX-License-Identifier: MIT
// Pins kernels/common/accum_exact_fold.h: a double that is a sum of floats goes into the limbs
// exactly (the same normalised limbs as its three float parts by exact_add), from the least
// subnormal's multiple to the limbs' top; folding floats into a running double and moving it
// when an addition would round leaves the accumulator of exact_add of every float, over
// exponent spans that make the double move often and never, with cancellation, zeros,
// subnormals, the top binades and the special values; and threads folding into one shared
// accumulator with atomics leave it too.
#include "kernels/common/accum_exact_fold.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "tests/support/rng.h"

namespace dt::kernels::common {
namespace {

/// The normalised accumulator of exact_add of every float of x.
ExactAcc reference(const std::vector<float>& x) {
    ExactAcc a;
    exact_init(a);
    for (float v : x) exact_add(a, v);
    exact_normalise(a);
    return a;
}

void expect_same(ExactAcc got, const ExactAcc& want, const char* what) {
    exact_normalise(got);
    for (int k = 0; k < kExactLimbs; ++k) ASSERT_EQ(got.limb[k], want.limb[k]) << what << " " << k;
    ASSERT_EQ(got.special, want.special) << what;
    const float g = exact_value(got), w = exact_value(want);
    ASSERT_EQ(float_to_bits(g), float_to_bits(w)) << what;
}

/// x folded into one running double (moves counted), moved in at the end.
ExactAcc folded(const std::vector<float>& x, int* moves) {
    ExactAcc a;
    exact_init(a);
    double part = 0.0;
    const auto move = [&](ExactAcc* acc, double d) {
        ++*moves;
        exact_add_double(*acc, d);
    };
    const auto flag = [](ExactAcc* acc, uint32_t f) { acc->special |= f; };
    for (float v : x) exact_fold(part, v, &a, move, flag);
    exact_add_double(a, part);
    return a;
}

/// Floats whose sum is d: d's three float parts (hi = float(d), mid = float(d - hi), lo: each
/// difference exact), of d / 2^s repeated 2^s times where d is too large for a float.
std::vector<float> float_parts(double d) {
    int s = 0;
    while (std::fabs(std::ldexp(d, -s)) >= std::ldexp(1.0, 127)) ++s;
    const double part = std::ldexp(d, -s);
    const float hi = static_cast<float>(part);
    const double r = part - hi;
    const float mid = static_cast<float>(r);
    const float lo = static_cast<float>(r - mid);
    EXPECT_EQ(static_cast<double>(hi) + mid + lo, part);
    std::vector<float> out;
    for (int64_t i = 0; i < (int64_t{1} << s); ++i) out.insert(out.end(), {hi, mid, lo});
    return out;
}

float full_mantissa(std::mt19937_64& rng, uint32_t e) {
    const uint32_t m = static_cast<uint32_t>(rng()) & 0x7fffffu;
    return bits_to_float(static_cast<uint32_t>(rng() & 1u) << 31 | e << 23 | m);
}

TEST(AccumExactFold, ADoubleGoesIntoTheLimbsExactly) {
    // d = M 2^(q - 149), M < 2^53 odd or even, q from -52 (the least subnormal float's
    // multiples) to the limbs' top; reference: float_parts(d), each by exact_add.
    std::mt19937_64 rng(test::test_seed() + 31);
    for (int trial = 0; trial < 20000; ++trial) {
        const int q = -52 + static_cast<int>(rng() % (138 + 149 - 53 + 52 + 1));
        uint64_t m = rng() >> 11;      // 53 bits
        if (q < 0) m = m >> -q << -q;  // a multiple of 2^-149
        if (trial % 5 == 0) m |= uint64_t{1} << 52;
        double d = std::ldexp(static_cast<double>(m), q - 149);
        if (rng() & 1u) d = -d;
        ExactAcc got;
        exact_init(got);
        exact_add_double(got, d);
        expect_same(got, reference(float_parts(d)), "double");
    }
    ExactAcc zero;
    exact_init(zero);
    exact_add_double(zero, -0.0);
    expect_same(zero, reference({}), "-0");
    const double top = std::ldexp(std::ldexp(1.0, 53) - 1.0, 138 - 53);  // the limbs' top bits
    ExactAcc big;
    exact_init(big);
    exact_add_double(big, top);
    exact_add_double(big, std::ldexp(-1.0, -149));
    std::vector<float> want = float_parts(top);
    want.push_back(std::ldexp(-1.0f, -149));
    expect_same(big, reference(want), "top and bottom");
}

TEST(AccumExactFold, FoldingGivesTheAccumulatorOfEveryFloat) {
    // Spans of exponents within which a running double of up to 2^(53 - 24 - span) terms never
    // rounds (no moves), and wider ones where it moves often; every result is exact_add's.
    std::mt19937_64 rng(test::test_seed() + 32);
    int moves_narrow = 0, moves_wide = 0;
    for (int span : {0, 3, 10, 29, 40, 120, 250}) {
        for (int trial = 0; trial < 200; ++trial) {
            const int n = 1 + static_cast<int>(rng() % (span <= 3 ? 64 : 400));
            const int top = 254 - span > 1 ? 254 - span : 1;
            const uint32_t e0 = 1 + static_cast<uint32_t>(rng() % static_cast<uint64_t>(top));
            std::vector<float> x(static_cast<std::size_t>(n));
            for (float& v : x) {
                const uint32_t e = e0 + static_cast<uint32_t>(rng() % (span + 1));
                v = full_mantissa(rng, e < 254 ? e : 254);
            }
            int moves = 0;
            expect_same(folded(x, &moves), reference(x), "spread");
            (span <= 3 ? moves_narrow : moves_wide) += moves;
        }
    }
    EXPECT_EQ(moves_narrow, 0) << "narrow spans stay in the double";
    EXPECT_GT(moves_wide, 1000) << "wide spans move the double";
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> mixed = {0.0f,  -0.0f, 1e-45f, -3e-39f, 1.0f, 3e38f,  3e38f,
                                3e38f, 2e37f, -3e38f, -3e38f,  5.0f, 1e-45f, -1.0f};
    for (int i = 0; i < 300; ++i)
        mixed.push_back(std::ldexp(1.0f + i, (i % 2 ? 1 : -1) * (i % 90)));
    int moves = 0;
    expect_same(folded(mixed, &moves), reference(mixed), "mixed");
    mixed.push_back(inf);
    expect_same(folded(mixed, &moves), reference(mixed), "+inf");
    mixed.push_back(-inf);
    expect_same(folded(mixed, &moves), reference(mixed), "+-inf");
    mixed.insert(mixed.begin() + 7, std::nanf(""));
    expect_same(folded(mixed, &moves), reference(mixed), "nan");
    std::vector<float> cancel;  // a sum that cancels to the least subnormal
    for (int i = 0; i < 50; ++i) cancel.push_back(std::ldexp(1.0f, 100 - i));
    for (int i = 0; i < 50; ++i) cancel.push_back(-std::ldexp(1.0f, 100 - i));
    cancel.push_back(1e-45f);
    expect_same(folded(cancel, &moves), reference(cancel), "cancellation");
}

TEST(AccumExactFold, ThreadsFoldingIntoOneAccumulatorWithAtomics) {
    // Four threads fold interleaved quarters of wide-span floats into one shared accumulator
    // (exact_fold_atomic's moves and flags are atomic), each moving its double in at the end.
    std::mt19937_64 rng(test::test_seed() + 33);
    std::vector<float> x(40000);
    for (float& v : x) v = full_mantissa(rng, 60 + static_cast<uint32_t>(rng() % 90));
    x[777] = std::numeric_limits<float>::infinity();
    ExactAcc shared;
    exact_init(shared);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            double part = 0.0;
            for (std::size_t i = t; i < x.size(); i += 4) exact_fold_atomic(part, x[i], &shared);
            exact_atomic_add_double(&shared, part);
        });
    }
    for (std::thread& t : threads) t.join();
    expect_same(shared, reference(x), "threads");
}

}  // namespace
}  // namespace dt::kernels::common
