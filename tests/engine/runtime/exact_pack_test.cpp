// SPDX-License-Identifier: MIT
// Packed exact accumulators (engine/runtime/exact_pack.h), the form the processes of a run
// exchange: packing keeps the value and the flags (positive and negative totals, every binade,
// subnormals, infinities, NaN); the all-zero packed form is the empty accumulator (MPI pads with
// it); and the packed sum gives the same words in any order and grouping, whose value is the
// exact sum of every input (what the ranks' reduction relies on).
#include "engine/runtime/exact_pack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/philox.h"

namespace dt {
namespace {

namespace c = kernels::common;

/// Term k of a wide set: magnitudes 2^-140 .. 2^120, both signs, some subnormals and zeros.
float term(uint64_t seed, int64_t k) {
    const c::Philox4 r = c::philox_draw(seed, c::RngStream::kTest, static_cast<uint64_t>(k), 0);
    const int e = static_cast<int>(r.v[1] % 260) - 140;
    float v = std::ldexp(c::uniform01(r.v[0]) + 0.5f, e);
    if (r.v[2] % 2) v = -v;
    if (k % 53 == 11) v = std::numeric_limits<float>::denorm_min() * static_cast<float>(k % 7);
    return v;
}

c::ExactAcc acc_of(uint64_t seed, int64_t lo, int64_t hi) {
    c::ExactAcc a;
    c::exact_init(a);
    for (int64_t k = lo; k < hi; ++k) c::exact_add(a, term(seed, k));
    return a;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_words(const PackedExactAcc& a, const PackedExactAcc& b) {
    return std::memcmp(a.word, b.word, sizeof a.word) == 0;
}

TEST(ExactPack, PackingKeepsTheValueAndTheNormalisedLimbs) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        c::ExactAcc a = acc_of(seed, 0, 200);
        if (seed % 2 == 0) {  // a negative total below the others: limb 8 negative
            c::ExactAcc big;
            c::exact_init(big);
            c::exact_add(big, -3e38f);
            c::exact_merge(a, big);
        }
        const c::ExactAcc b = exact_unpack(exact_pack(a));
        c::ExactAcc n = a;
        c::exact_normalise(n);
        for (int k = 0; k < c::kExactLimbs; ++k) EXPECT_EQ(b.limb[k], n.limb[k]) << k;
        EXPECT_TRUE(same_bits(c::exact_value(b), c::exact_value(a))) << seed;
        EXPECT_EQ(b.special, a.special);
    }
}

TEST(ExactPack, TheZeroFormIsTheEmptyAccumulatorAndFlagsTravel) {
    c::ExactAcc empty;
    c::exact_init(empty);
    const PackedExactAcc zero{};
    EXPECT_TRUE(same_words(exact_pack(empty), zero));
    PackedExactAcc x = exact_pack(acc_of(3, 0, 50));
    const PackedExactAcc before = x;
    exact_packed_merge(&zero, &x, 1);
    EXPECT_TRUE(same_words(x, before));
    for (float s : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::nanf("")}) {
        c::ExactAcc a = acc_of(4, 0, 10);
        c::exact_add(a, s);
        const c::ExactAcc b = exact_unpack(exact_pack(a));
        EXPECT_TRUE(same_bits(c::exact_value(b), c::exact_value(a))) << s;
    }
    c::ExactAcc pos, neg;
    c::exact_init(pos), c::exact_init(neg);
    c::exact_add(pos, std::numeric_limits<float>::infinity());
    c::exact_add(neg, -std::numeric_limits<float>::infinity());
    PackedExactAcc p = exact_pack(pos);
    const PackedExactAcc q = exact_pack(neg);
    exact_packed_merge(&q, &p, 1);  // +inf and -inf from two ranks: NaN
    EXPECT_TRUE(std::isnan(c::exact_value(exact_unpack(p))));
}

TEST(ExactPack, ThePackedSumIsTheExactSumInAnyOrderAndGrouping) {
    constexpr int64_t kTerms = 3001, kParts = 7;
    for (uint64_t seed = 10; seed < 16; ++seed) {
        std::vector<PackedExactAcc> parts;
        for (int64_t r = 0; r < kParts; ++r)
            parts.push_back(
                exact_pack(acc_of(seed, kTerms * r / kParts, kTerms * (r + 1) / kParts)));
        PackedExactAcc left = parts[0];  // ((p0 + p1) + p2) + ...
        for (int64_t r = 1; r < kParts; ++r) exact_packed_merge(&parts[r], &left, 1);
        PackedExactAcc right = parts[kParts - 1];  // p0 + (p1 + (... + p6))
        for (int64_t r = kParts - 2; r >= 0; --r) exact_packed_merge(&parts[r], &right, 1);
        std::vector<PackedExactAcc> level = parts;  // pairs, as a recursive-halving MPI would
        while (level.size() > 1) {
            std::vector<PackedExactAcc> next;
            for (std::size_t i = 0; i + 1 < level.size(); i += 2) {
                next.push_back(level[i + 1]);
                exact_packed_merge(&level[i], &next.back(), 1);
            }
            if (level.size() % 2) next.push_back(level.back());
            level = next;
        }
        EXPECT_TRUE(same_words(left, right)) << seed;
        EXPECT_TRUE(same_words(left, level[0])) << seed;
        std::vector<float> all(kTerms);
        for (int64_t k = 0; k < kTerms; ++k) all[static_cast<std::size_t>(k)] = term(seed, k);
        EXPECT_TRUE(same_bits(c::exact_value(exact_unpack(left)), c::exact_sum(all.data(), kTerms)))
            << seed;
    }
}

/// Sums of a few floats of one sign mix and scale: narrow ones (a window of 63 bits holds them)
/// from the subnormal range to near overflow.
c::ExactAcc narrow_acc(uint64_t seed, int scale) {
    c::ExactAcc a;
    c::exact_init(a);
    for (uint64_t k = 0; k < 5; ++k) {
        const c::Philox4 r = c::philox_draw(seed, c::RngStream::kTest, k, 3);
        c::exact_add(a, std::ldexp(c::uniform01(r.v[0]) - 0.3f, scale - static_cast<int>(k % 3)));
    }
    c::exact_normalise(a);
    return a;
}

bool same_limbs(c::ExactAcc a, c::ExactAcc b) {
    c::exact_normalise(a), c::exact_normalise(b);
    return std::equal(a.limb, a.limb + c::kExactLimbs, b.limb);
}

TEST(ExactPack, ShiftedValuesRoundAsTheAccumulator) {
    // exact_bits_shifted finds the least bit and a bound and gives value >> lo; shifted to any
    // lo up to that bit (as the exchange's windows do), summed as integers and rounded by
    // exact_value_scaled, the values are exact_value of the sum: normal results, subnormal ones
    // (scale -140) and overflow to infinity (scale 127).
    for (int scale : {-140, -126, -20, 0, 30, 100, 126, 127}) {
        for (uint64_t seed = 1; seed < 40; ++seed) {
            SCOPED_TRACE("scale " + std::to_string(scale) + " seed " + std::to_string(seed));
            const c::ExactAcc a = narrow_acc(seed, scale), b = narrow_acc(seed + 1000, scale);
            c::ExactAcc raw = a;  // the same value, not normalised
            raw.limb[3] -= int64_t{5} << 32, raw.limb[4] += 5;
            int32_t alo = -1, ahi = -1, blo = -1, bhi = -1;
            int64_t aown = 0, bown = 0;
            ASSERT_TRUE(exact_bits_shifted(raw, &alo, &ahi, &aown));
            ASSERT_TRUE(exact_bits_shifted(b, &blo, &bhi, &bown));
            // own * 2^lo is the value itself, lo its least bit (own odd), and hi - lo the bit
            // length of own (of ~own plus one when negative): 2^(h-1) <= own < 2^h, or
            // 2^(h-2) < -own <= 2^(h-1).
            EXPECT_TRUE(same_limbs(exact_from_scaled(aown, alo), a));
            EXPECT_EQ(aown & 1, 1);
            const int h = ahi - alo;
            if (aown > 0) {
                EXPECT_GE(aown, int64_t{1} << (h - 1));
                EXPECT_LT(aown, int64_t{1} << h);
            } else {
                EXPECT_GT(-aown, int64_t{1} << (h - 2));
                EXPECT_LE(-aown, int64_t{1} << (h - 1));
            }
            const int32_t lo = std::min(alo, blo), hi = std::max(ahi, bhi);
            ASSERT_LE(hi - lo, 61);
            for (int32_t shift : {lo, std::max(0, lo - 5)}) {
                const int64_t as = aown * (int64_t{1} << (alo - shift));
                const int64_t bs = bown * (int64_t{1} << (blo - shift));
                EXPECT_TRUE(same_bits(exact_value_scaled(as, shift), c::exact_value(a)))
                    << "shift " << shift;
                c::ExactAcc sum = a;
                c::exact_merge(sum, b);
                EXPECT_TRUE(same_bits(exact_value_scaled(as + bs, shift), c::exact_value(sum)))
                    << "shift " << shift;
            }
        }
    }
    c::ExactAcc zero;
    c::exact_init(zero);
    int32_t zlo = -1, zhi = -1;
    int64_t zown = -1;
    EXPECT_FALSE(exact_bits_shifted(zero, &zlo, &zhi, &zown));
    EXPECT_EQ(zown, 0);
    EXPECT_TRUE(same_bits(exact_value_scaled(0, 17), 0.0f));
    // exact_from_scaled past limb 7: the rest in the signed top limb.
    EXPECT_TRUE(same_limbs(exact_from_scaled(-3, 280), [] {
        c::ExactAcc t;
        c::exact_init(t);
        t.limb[c::kExactLimbs - 1] = -3 * (int64_t{1} << (280 - 256));
        return t;
    }()));
}

}  // namespace
}  // namespace dt
