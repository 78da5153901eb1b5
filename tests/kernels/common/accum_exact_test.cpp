// SPDX-License-Identifier: MIT
// Pins the `exact` mode (kernels/common/accum_exact.h): the result equals an independent
// reference (sign-magnitude big integers over the inputs' integer mantissas, rounded once by hand)
// on adversarial inputs, does not depend on order or partition, and follows the documented rules
// for zeros, infinities and NaN; atomic adds from many threads give the same bits.
#include "kernels/common/accum_exact.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels::common {
namespace {

using test::bits;

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// ---- the reference: plain schoolbook big integers, full carry on every add ----
constexpr int kWords = 12;  // 384 bits: 277 for one float plus 100 bits of headroom
struct Big {
    uint32_t w[kWords] = {};
};

void big_add_shifted(Big& a, uint64_t m, int p) {  // a += m * 2^p
    int idx = p / 32;
    unsigned __int128 v = static_cast<unsigned __int128>(m) << (p % 32);
    uint64_t carry = 0;
    for (int i = idx; i < kWords; ++i) {
        uint64_t s = uint64_t{a.w[i]} + static_cast<uint32_t>(v) + carry;
        a.w[i] = static_cast<uint32_t>(s);
        carry = s >> 32;
        v >>= 32;
        if (v == 0 && carry == 0) break;
    }
}
int big_cmp(const Big& a, const Big& b) {
    for (int i = kWords - 1; i >= 0; --i) {
        if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
    }
    return 0;
}
Big big_sub(const Big& a, const Big& b) {  // a >= b
    Big r;
    int64_t borrow = 0;
    for (int i = 0; i < kWords; ++i) {
        int64_t d = int64_t{a.w[i]} - int64_t{b.w[i]} - borrow;
        borrow = d < 0;
        r.w[i] = static_cast<uint32_t>(d + (borrow << 32));
    }
    return r;
}
bool big_bit(const Big& a, int i) { return i >= 0 && ((a.w[i / 32] >> (i % 32)) & 1u); }

float reference_sum(const std::vector<float>& x) {
    Big pos, neg;
    bool nan = false, pinf = false, ninf = false;
    for (float f : x) {
        if (std::isnan(f)) nan = true;
        else if (std::isinf(f)) (f > 0 ? pinf : ninf) = true;
        if (!std::isfinite(f) || f == 0.0f) continue;
        int e;  // f = fr * 2^e, fr in [0.5, 1): integer mantissa over 2^-149 units
        double fr = std::frexp(std::fabs(static_cast<double>(f)), &e);
        int p = std::max(e - 24 + 149, 0);
        uint64_t m = static_cast<uint64_t>(std::ldexp(fr, e + 149 - p));
        big_add_shifted(f > 0 ? pos : neg, m, p);
    }
    if (nan || (pinf && ninf)) return std::numeric_limits<float>::quiet_NaN();
    if (pinf) return INFINITY;
    if (ninf) return -INFINITY;
    int c = big_cmp(pos, neg);
    if (c == 0) return 0.0f;
    Big mag = c > 0 ? big_sub(pos, neg) : big_sub(neg, pos);
    float sign = c > 0 ? 1.0f : -1.0f;
    int t = kWords * 32 - 1;
    while (!big_bit(mag, t)) --t;
    uint64_t mant = 0;
    for (int i = t; i >= std::max(t - 23, 0); --i) mant = mant * 2 + big_bit(mag, i);
    int scale = -149;
    if (t >= 24) {
        bool half = big_bit(mag, t - 24), sticky = false;
        for (int i = t - 25; i >= 0; --i) sticky = sticky || big_bit(mag, i);
        if (half && (sticky || (mant & 1))) ++mant;  // ties to even
        scale = t - 23 - 149;
    }
    double r = std::ldexp(static_cast<double>(mant), scale);  // exact in double
    if (r >= 0x1p128) return sign * INFINITY;
    return sign * static_cast<float>(r);  // exact: mant <= 2^24 at a float exponent
}

float exact_of(const std::vector<float>& x) {
    ExactAcc a;
    exact_init(a);
    for (float f : x) exact_add(a, f);
    return exact_value(a);
}

// Expects the exact sum to be `want` (bitwise), to equal the reference, and exact_sum to agree.
void check(const std::vector<float>& x, float want) {
    SCOPED_TRACE(::testing::Message() << "n = " << x.size());
    EXPECT_EQ(bits(exact_of(x)), bits(want)) << exact_of(x) << " vs " << want;
    EXPECT_EQ(bits(reference_sum(x)), bits(want)) << "reference disagrees with the expectation";
    EXPECT_EQ(bits(exact_sum(x.data(), static_cast<int64_t>(x.size()))), bits(want));
}

const float kMax = 3.40282347e38f;
const float kTiny = 1.40129846e-45f;  // 2^-149

TEST(AccumExact, LayoutIsSmallPod) {
    static_assert(sizeof(ExactAcc) <= 96);
    static_assert(std::is_trivial_v<ExactAcc> && std::is_standard_layout_v<ExactAcc>);
}

TEST(AccumExact, Cancellation) {
    check({1e30f, 1.0f, -1e30f}, 1.0f);
    check({1e30f, -1e30f, 1.0f}, 1.0f);
    check({kMax, kTiny, -kMax}, kTiny);
    check({1e38f, 1e-38f, -1e38f, 3e-45f, -1e-38f}, from_bits(2));  // 3e-45 rounds to 2 * 2^-149
    std::vector<float> alt;  // alternating +-huge with tiny residues: the sum is the residues
    for (int i = 0; i < 1000; ++i) {
        float h = std::ldexp(1.0f + i / 1024.0f, 100 + i % 27);
        alt.insert(alt.end(), {h, 1e-30f * (i % 3), -h});
    }
    // Residues 1e-30f * (i % 3) over i < 1000 sum to 999 * 1e-30f exactly (exact in double).
    check(alt, static_cast<float>(999.0 * static_cast<double>(1e-30f)));
}

TEST(AccumExact, Subnormals) {
    std::mt19937_64 g(test::test_seed());
    for (int trial = 0; trial < 50; ++trial) {
        std::vector<float> x(1 + g() % 5000);
        for (auto& f : x) f = from_bits((static_cast<uint32_t>(g()) & 0x807fffffu));  // E = 0
        check(x, reference_sum(x));
    }
    check({from_bits(0x007fffffu), kTiny}, from_bits(0x00800000u));  // into the normal range
    check({from_bits(0x00400000u), from_bits(0x80400001u)}, -kTiny);
}

TEST(AccumExact, TiesRoundToEven) {
    const float t24 = 16777216.0f;  // 2^24: ulp 2
    check({t24, 1.0f}, t24);                   // tie, even below
    check({t24, 2.0f, 1.0f}, 16777220.0f);     // tie, even above
    check({t24, 1.0f, 0x1p-30f}, 16777218.0f);  // just above the tie
    check({t24, 1.0f, -0x1p-30f}, t24);         // just below the tie
    check({-t24, -2.0f, -1.0f}, -16777220.0f);
    check({-t24, -1.0f}, -t24);
    check({0x1p100f, 0x1p76f}, 0x1p100f);                    // half ulp, sticky 4 limbs away
    check({0x1p100f, 0x1p76f, kTiny}, 0x1p100f + 0x1p77f);   // sticky in the lowest limb
    check({0x1p100f, 0x1p77f, 0x1p76f}, 0x1p100f + 0x1p78f); // odd + half -> up
    check({1.0f, 0x1p-24f}, 1.0f);
    check({1.0f, 0x1p-24f, 0x1p-23f}, 1.0f + 0x1p-22f);
    // Mantissa carry into the next binade: (2^24 - 1) + 0.5 rounds up to 2^24.
    check({16777215.0f, 0.5f}, t24);
}

TEST(AccumExact, OverflowToInfinity) {
    check({kMax, kMax}, INFINITY);
    check({-kMax, -kMax}, -INFINITY);
    check({kMax, kMax, -kMax}, kMax);  // no intermediate overflow
    check({kMax, 0x1p103f}, INFINITY);  // exactly half an ulp above FLT_MAX: tie -> 2^128 -> inf
    check({kMax, 0x1p103f, -kTiny}, kMax);
    check({kMax, 0x1p102f}, kMax);
    std::vector<float> many(1 << 20, kMax);
    check(many, INFINITY);
    for (int i = 0; i < (1 << 20) - 1; ++i) many.push_back(-kMax);
    check(many, kMax);
}

TEST(AccumExact, SignedZeros) {
    check({}, 0.0f);
    check({-0.0f}, 0.0f);  // documented: the sign of zero is not tracked, exact zero is +0
    check({-0.0f, -0.0f}, 0.0f);
    check({0.0f, -0.0f}, 0.0f);
    check({1.0f, -1.0f}, 0.0f);
    check({-1.0f, 1.0f, -0.0f}, 0.0f);
    check({-kTiny, -0.0f}, -kTiny);
}

TEST(AccumExact, InfinitiesAndNaN) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(bits(exact_of({1.0f, nan})), 0x7fc00000u);
    EXPECT_EQ(bits(exact_of({from_bits(0xffc00001u)})), 0x7fc00000u);  // negative NaN payload
    EXPECT_EQ(bits(exact_of({INFINITY, -INFINITY})), 0x7fc00000u);
    EXPECT_EQ(bits(exact_of({INFINITY, nan, 2.0f})), 0x7fc00000u);
    EXPECT_EQ(exact_of({INFINITY, 1.0f}), INFINITY);
    EXPECT_EQ(exact_of({-INFINITY, -INFINITY, kMax, kMax}), -INFINITY);  // finite part ignored
    EXPECT_EQ(exact_of({INFINITY, -kMax, -kMax}), INFINITY);
    for (auto v : std::vector<std::vector<float>>{{nan}, {INFINITY, -INFINITY}, {-INFINITY, 3.0f}})
        EXPECT_EQ(bits(exact_of(v)), bits(reference_sum(v)));
}

TEST(AccumExact, SingleValuesAndPairsMatchIeeeAddition) {
    // One value: itself. Two values: one IEEE addition is also the exact sum rounded once.
    for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 509) {
        float x = from_bits(static_cast<uint32_t>(u));
        if (std::isnan(x) || bits(x) == 0x80000000u) continue;
        ASSERT_EQ(bits(exact_of({x})), bits(x)) << std::hex << u;
    }
    std::mt19937_64 g(test::test_seed());
    for (int i = 0; i < 1000000; ++i) {
        float x = from_bits(static_cast<uint32_t>(g())), y = from_bits(static_cast<uint32_t>(g()));
        if (i % 2) y = from_bits(bits(x) ^ 0x80000000u ^ (static_cast<uint32_t>(g()) & 0x00ffffffu));
        if (std::isnan(x) || std::isnan(y) || (bits(x + y) == 0x80000000u)) continue;
        ASSERT_EQ(bits(exact_of({x, y})), bits(x + y)) << x << " + " << y;
    }
}

std::vector<float> wide_random(std::mt19937_64& g, int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (auto& f : x) {
        uint32_t e = static_cast<uint32_t>(g() % 255);  // 0..254: finite, incl. subnormals
        f = from_bits((static_cast<uint32_t>(g()) & 0x807fffffu) | (e << 23));
    }
    // Three quarters cancel exactly (in any order, deep cancellation), one quarter is fresh.
    std::vector<float> y = x;
    for (std::size_t i = 0; i < y.size(); ++i) {
        uint32_t e = static_cast<uint32_t>(g() % 255);
        y[i] = i % 4 ? -x[i] : from_bits((static_cast<uint32_t>(g()) & 0x807fffffu) | (e << 23));
    }
    x.insert(x.end(), y.begin(), y.end());
    std::shuffle(x.begin(), x.end(), g);
    return x;
}

TEST(AccumExact, RandomWideExponentsMatchReference) {
    std::mt19937_64 g(test::test_seed() + 1);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<float> x = wide_random(g, 1 + static_cast<int64_t>(g() % 300));
        ASSERT_EQ(bits(exact_of(x)), bits(reference_sum(x))) << "trial " << trial;
    }
}

TEST(AccumExact, LongInputsMatchReference) {
    std::mt19937_64 g(test::test_seed() + 2);
    std::vector<float> x = test::uniform_floats(3000000, -1.0f, 1.0f, test::test_seed());
    for (int i = 0; i < 1000; ++i) x[g() % x.size()] = std::ldexp(1.0f, 60 + int(g() % 60));
    std::vector<float> w = wide_random(g, 500000);
    x.insert(x.end(), w.begin(), w.end());
    const float want = reference_sum(x);
    EXPECT_EQ(bits(exact_sum(x.data(), static_cast<int64_t>(x.size()))), bits(want));
    EXPECT_EQ(bits(exact_of(x)), bits(want));
    // Strided view: every third element.
    std::vector<float> third;
    for (std::size_t i = 0; i < x.size(); i += 3) third.push_back(x[i]);
    EXPECT_EQ(bits(exact_sum(x.data(), static_cast<int64_t>(third.size()), 3)),
              bits(reference_sum(third)));
}

TEST(AccumExact, OrderAndPartitionInvariance) {
    std::mt19937_64 g(test::test_seed() + 3);
    std::vector<float> x = wide_random(g, 20000);
    for (int i = 0; i < 2000; ++i) x.push_back(from_bits(static_cast<uint32_t>(g()) & 0x80ffffffu));
    const float want = reference_sum(x);
    ASSERT_EQ(bits(exact_of(x)), bits(want));
    for (int trial = 0; trial < 20; ++trial) {
        std::shuffle(x.begin(), x.end(), g);
        std::vector<ExactAcc> parts;  // random chunks, accumulated two different ways
        for (std::size_t lo = 0; lo < x.size();) {
            std::size_t len = std::min<std::size_t>(x.size() - lo, 1 + g() % (trial % 2 ? 3000 : 12000));
            ExactAcc a;
            exact_init(a);
            if (g() % 2) exact_add_array(a, x.data() + lo, static_cast<int64_t>(len));
            else for (std::size_t i = lo; i < lo + len; ++i) exact_add(a, x[i]);
            parts.push_back(a);
            lo += len;
        }
        std::shuffle(parts.begin(), parts.end(), g);
        while (parts.size() > 1) {  // merge random pairs: arbitrary association
            std::size_t i = g() % (parts.size() - 1);
            exact_merge(parts[i], parts[i + 1]);
            parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        }
        ASSERT_EQ(bits(exact_value(parts[0])), bits(want)) << "trial " << trial;
    }
}

TEST(AccumExact, BinnedPathEqualsPerElementPath) {
    // exact_sum of >= kExactBinsMin elements bins mantissas by exponent on the host; exact_add
    // and the device's direct path never do. All must equal the reference on every input.
    std::mt19937_64 g(test::test_seed() + 5);
    std::vector<std::vector<float>> sets;
    sets.push_back(wide_random(g, 5000));
    std::vector<float> sub(kExactBinsMin);
    for (auto& f : sub) f = from_bits(static_cast<uint32_t>(g()) & 0x807fffffu);
    sets.push_back(sub);
    std::vector<float> top;  // the highest exponents, both signs: bins fold into limb 8
    for (int i = 0; i < 300000; ++i) top.push_back(from_bits((i % 2 ? 0xff000000u : 0x7f000000u) |
                                                             (static_cast<uint32_t>(g()) & 0x7fffffu)));
    top.push_back(3.0f);
    sets.push_back(top);
    std::vector<float> big_cancel;
    for (int i = 0; i < (1 << 20); ++i) big_cancel.push_back(i % 2 ? -kMax : kMax);
    big_cancel[12345] = 1.0f;  // replaces one -kMax: the sum is kMax + 1 -> kMax
    sets.push_back(big_cancel);
    // Many equal-exponent values: bins reach 2^40 and their fold spans three digits. The
    // exponents E with (E - 1) % 32 == 31 give the widest shift; both signs, no huge outliers.
    for (uint32_t e : {32u, 64u, 96u, 126u, 128u, 160u, 192u, 224u, 254u}) {
        std::vector<float> same(200000);
        for (std::size_t i = 0; i < same.size(); ++i) {
            uint32_t sign = (i % 3 == 0) ? 0x80000000u : 0u;
            same[i] = from_bits(sign | (e << 23) | (static_cast<uint32_t>(g()) & 0x7fffffu));
        }
        sets.push_back(same);
    }
    sets.push_back(test::uniform_floats(2000000, -1.0f, 1.0f, test::test_seed(), 8));
    std::vector<float> mixed = wide_random(g, 3000);
    mixed.insert(mixed.end(), {INFINITY, 1.0f});
    sets.push_back(mixed);
    for (int64_t n : {kExactBinsMin - 1, kExactBinsMin, kExactBinsMin + 1}) {
        std::vector<float> x = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 9);
        x[7] = 1e20f;
        sets.push_back(x);
    }
    for (std::size_t k = 0; k < sets.size(); ++k) {
        const std::vector<float>& x = sets[k];
        const float want = reference_sum(x);
        EXPECT_EQ(bits(exact_sum(x.data(), static_cast<int64_t>(x.size()))), bits(want)) << k;
        EXPECT_EQ(bits(exact_of(x)), bits(want)) << k;
        // Device code's path for every length (exact_add_array under __CUDA_ARCH__), which the
        // host uses below kExactBinsMin only: four interleaved accumulators, merged.
        ExactAcc direct;
        exact_init(direct);
        exact_add_direct(direct, x.data(), static_cast<int64_t>(x.size()), 1);
        EXPECT_EQ(bits(exact_value(direct)), bits(want)) << k;
        std::vector<float> odd;  // strided binned path
        for (std::size_t i = 1; i < x.size(); i += 2) odd.push_back(x[i]);
        EXPECT_EQ(bits(exact_sum(x.data() + 1, static_cast<int64_t>(odd.size()), 2)),
                  bits(reference_sum(odd))) << k;
    }
}

TEST(AccumExact, HeadroomOfDeferredCarries) {
    // 31 self-merges of one normalised accumulator = 2^31 units, the documented headroom, with
    // the largest digits an add can produce (mantissa all ones at shift 8 -> 0xffffff00).
    for (float x : {from_bits(0x04ffffffu), from_bits(0x84ffffffu), 1.5f, -kTiny, 0x1p-100f}) {
        ExactAcc a;
        exact_init(a);
        exact_add(a, x);
        for (int i = 0; i < 31; ++i) exact_merge(a, ExactAcc(a));
        EXPECT_EQ(bits(exact_value(a)), bits(x * 0x1p31f)) << x;
        exact_normalise(a);  // and it keeps going after a normalisation
        exact_add(a, -x * 0x1p31f);
        exact_add(a, x);
        EXPECT_EQ(bits(exact_value(a)), bits(x)) << x;
    }
}

TEST(AccumExact, RowHelpersEqualScalar) {
    std::mt19937_64 g(test::test_seed() + 4);
    const int64_t rows = 37, len = 19;
    std::vector<float> x = wide_random(g, rows * len / 2 + 1);
    x.resize(static_cast<std::size_t>(rows * len));
    std::vector<ExactAcc> acc(len), acc2(len);
    exact_init_row(acc.data(), len);
    exact_init_row(acc2.data(), len);
    for (int64_t r = 0; r < rows; ++r) {
        exact_add_row((r % 2 ? acc : acc2).data(), x.data() + r * len, len);
    }
    for (int64_t i = 0; i < len; ++i) {
        exact_merge(acc[i], acc2[i]);
        exact_normalise(acc[i]);
    }
    std::vector<float> out(2 * len);
    exact_value_row(acc.data(), out.data(), len, 2);
    for (int64_t i = 0; i < len; ++i) {
        std::vector<float> col;
        for (int64_t r = 0; r < rows; ++r) col.push_back(x[r * len + i]);
        EXPECT_EQ(bits(out[2 * i]), bits(reference_sum(col))) << "column " << i;
        EXPECT_EQ(bits(exact_sum(x.data() + i, rows, len)), bits(reference_sum(col)));
    }
}

TEST(AccumExact, AtomicAddsFromManyThreadsGiveTheExactSum) {
    // exact_atomic_add from four threads at once into one accumulator, each taking every fourth
    // input (real atomics, interleaved however the threads run): the exact sum's bits, as for
    // exact_add in one thread. Inputs: wide exponents of both signs, subnormals, zeros.
    std::mt19937_64 g(test::test_seed() + 5);
    std::vector<float> x = wide_random(g, 20000);
    for (int i = 0; i < 500; ++i) x.push_back(from_bits(static_cast<uint32_t>(g()) & 0x807fffffu));
    x.push_back(0.0f);
    x.push_back(-0.0f);
    auto atomic_sum = [](const std::vector<float>& v, ExactAcc& shared) {
        exact_init(shared);
        std::vector<std::thread> threads;
        for (std::size_t t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (std::size_t i = t; i < v.size(); i += 4) exact_atomic_add(&shared, v[i]);
            });
        for (std::thread& th : threads) th.join();
    };
    ExactAcc shared;
    atomic_sum(x, shared);
    EXPECT_EQ(bits(exact_value(shared)), bits(reference_sum(x)));
    // Each band of 8 binades on its own (every limb pair; in a wide sum the small ones vanish
    // in the rounding): both signs, all mantissas.
    for (uint32_t e0 = 0; e0 < 255; e0 += 8) {
        std::vector<float> band;
        for (int i = 0; i < 3000; ++i) {
            const uint32_t e = std::min<uint32_t>(254u, e0 + static_cast<uint32_t>(g() % 8));
            band.push_back(from_bits((static_cast<uint32_t>(g()) & 0x807fffffu) | (e << 23)));
        }
        atomic_sum(band, shared);
        EXPECT_EQ(bits(exact_value(shared)), bits(reference_sum(band))) << "exponents from " << e0;
    }
    // the flags: an infinity or a NaN added atomically is kept as exact_add keeps it
    exact_atomic_add(&shared, std::numeric_limits<float>::infinity());
    EXPECT_EQ(bits(exact_value(shared)), bits(std::numeric_limits<float>::infinity()));
    exact_atomic_add(&shared, -std::numeric_limits<float>::infinity());
    EXPECT_EQ(bits(exact_value(shared)), 0x7fc00000u);
}

}  // namespace
}  // namespace dt::kernels::common
