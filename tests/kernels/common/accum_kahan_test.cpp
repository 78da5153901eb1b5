// SPDX-License-Identifier: MIT
// Pins the `kahan` mode (kernels/common/accum_kahan.h): kahan_add is the textbook Neumaier loop
// bit for bit, kahan_merge follows its documented order, the tree over compensated leaves has the
// shape of reduce_tree.h, and the result is more accurate than plain summation.
#include "kernels/common/accum_kahan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"
#include "tests/support/tree_slices.h"

namespace dt::kernels::common {
namespace {

using test::bits;

// Neumaier's algorithm as usually written (e.g. Wikipedia "Kahan summation", improved version).
float neumaier_textbook(const std::vector<float>& x, float* comp_out = nullptr) {
    float sum = 0.0f, c = 0.0f;
    for (float v : x) {
        float t = sum + v;
        if (std::fabs(sum) >= std::fabs(v))
            c += (sum - t) + v;
        else
            c += (v - t) + sum;
        sum = t;
    }
    if (comp_out) *comp_out = c;
    return sum + c;
}

std::vector<float> wide(int64_t n, uint32_t tag) {
    std::vector<float> x = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), tag);
    for (int64_t i = 0; i < n; ++i)
        x[i] = x[i] * std::ldexp(1.0f, static_cast<int>(i * 7 % 41) - 20);
    return x;
}

// Ill-conditioned: big values that cancel, in mixed order, plus small ones that carry the sum.
std::vector<float> ill_conditioned(int64_t n, std::mt19937_64& g) {
    std::vector<float> x;
    for (int64_t i = 0; i < n; ++i) {
        float big = std::ldexp(1.0f + static_cast<float>(g() % 1000) / 1000.0f, 20);
        float small = static_cast<float>(g() % 2001) / 1000.0f - 1.0f;
        x.insert(x.end(), {big, small, -big * (1.0f + 0x1p-20f * static_cast<float>(g() % 5))});
    }
    std::shuffle(x.begin(), x.end(), g);
    return x;
}

TEST(AccumKahan, LayoutIsPod) {
    static_assert(sizeof(KahanSum) == 8);
    static_assert(std::is_trivial_v<KahanSum> && std::is_standard_layout_v<KahanSum>);
}

TEST(AccumKahan, AddMatchesTextbookNeumaierBitwise) {
    for (int64_t n : {0, 1, 2, 3, 17, 1000, 100000}) {
        std::vector<float> x = wide(n, static_cast<uint32_t>(n));
        float comp = 0.0f;
        const float want = neumaier_textbook(x, &comp);
        KahanSum k = kahan_sum(x.data(), n);
        EXPECT_EQ(bits(kahan_value(k)), bits(want)) << "n = " << n;
        EXPECT_EQ(bits(k.comp), bits(comp)) << "n = " << n;
    }
    std::mt19937_64 g(test::test_seed());
    std::vector<float> x = ill_conditioned(5000, g);
    EXPECT_EQ(bits(kahan_value(kahan_sum(x.data(), static_cast<int64_t>(x.size())))),
              bits(neumaier_textbook(x)));
}

TEST(AccumKahan, TwoSumErrorEqualsNeumaierBranchForm) {
    // kahan_add computes the error branch-free (2Sum); it must be Neumaier's branch form bitwise.
    std::mt19937_64 g(test::test_seed() + 2);
    for (int i = 0; i < 3000000; ++i) {
        const uint64_t r = g();
        uint32_t ua = static_cast<uint32_t>(r), ub = static_cast<uint32_t>(r >> 32);
        if (i % 3 == 1) ub = ua ^ 0x80000000u ^ (ub & 0xffffu);  // near cancellation
        if (i % 3 == 2) ub = (ua & 0xff800000u) - (ub & 0x0f800000u) + (ub & 0x7fffffu);
        float a, b;
        std::memcpy(&a, &ua, 4);
        std::memcpy(&b, &ub, 4);
        const float t = a + b;
        if (!std::isfinite(t) || std::isnan(a) || std::isnan(b)) continue;
        const float branch = std::fabs(a) >= std::fabs(b) ? (a - t) + b : (b - t) + a;
        ASSERT_EQ(bits(two_sum_err(a, b, t)), bits(branch)) << a << " + " << b;
    }
}

TEST(AccumKahan, MergeOrderByHand) {
    const KahanSum a{1e8f, 0.25f}, b{3.0f, -1e-3f};
    KahanSum m = a;
    kahan_merge(m, b);
    const float t = a.sum + b.sum;
    EXPECT_EQ(bits(m.sum), bits(t));
    EXPECT_EQ(bits(m.comp), bits((a.comp + b.comp) + ((a.sum - t) + b.sum)));
    m = b;  // b is smaller in magnitude: the roles of big and small swap
    kahan_merge(m, a);
    EXPECT_EQ(bits(m.comp), bits((b.comp + a.comp) + ((a.sum - t) + b.sum)));
    // Merging a leaf (x, 0) reproduces kahan_add's error term.
    KahanSum k{5.5f, 1e-7f}, k2 = k;
    kahan_add(k, 1e-6f);
    kahan_merge(k2, KahanSum{1e-6f, 0.0f});
    EXPECT_EQ(bits(k.sum), bits(k2.sum));
    EXPECT_EQ(bits(k.comp), bits(k2.comp));
}

KahanSum tree_recursive(const KahanSum* p, int64_t n) {
    if (n == 1) return p[0];
    int64_t s = 1;
    while (s * 2 < n) s *= 2;
    KahanSum l = tree_recursive(p, s);
    kahan_merge(l, tree_recursive(p + s, n - s));
    return l;
}

TEST(AccumKahan, TreeMatchesRecursiveDefinition) {
    std::vector<float> x = wide(300 * 5, 7);
    std::vector<KahanSum> leaves(300);
    for (int64_t c = 0; c < 300; ++c) leaves[c] = kahan_sum(x.data() + 5 * c, 5);
    for (int64_t n = 1; n <= 300; ++n) {
        KahanSum got = kahan_tree_combine(leaves.data(), n),
                 want = tree_recursive(leaves.data(), n);
        ASSERT_EQ(bits(got.sum), bits(want.sum)) << "n = " << n;
        ASSERT_EQ(bits(got.comp), bits(want.comp)) << "n = " << n;
    }
    KahanSum z = kahan_tree_combine(leaves.data(), 0);
    EXPECT_EQ(bits(z.sum), 0u);
    EXPECT_EQ(bits(z.comp), 0u);
    // n=3 by hand: (p0 (+) p1) (+) p2.
    KahanSum h = leaves[0];
    kahan_merge(h, leaves[1]);
    kahan_merge(h, leaves[2]);
    EXPECT_EQ(bits(kahan_value(kahan_tree_combine(leaves.data(), 3))), bits(kahan_value(h)));
}

TEST(AccumKahan, AFewLeavesInPairsOfPairsAreTheTree) {
    std::vector<float> x = wide(8 * 5, 9);
    std::vector<KahanSum> leaves(8);
    for (int64_t c = 0; c < 8; ++c) leaves[c] = kahan_sum(x.data() + 5 * c, 5);
    for (int n = 0; n <= 8; ++n) {
        std::vector<KahanSum> v = leaves;
        const KahanSum got = kahan_tree_of_at_most_8(v.data(), n);
        const KahanSum want = kahan_tree_combine(leaves.data(), n);
        ASSERT_EQ(bits(got.sum), bits(want.sum)) << "n = " << n;
        ASSERT_EQ(bits(got.comp), bits(want.comp)) << "n = " << n;
    }
}

TEST(AccumKahan, ChunkedRecipe) {
    const int64_t n = 1000, chunk = 256;  // leaves [0,256) [256,512) [512,768) [768,1000)
    std::vector<float> x = wide(n, 3);
    KahanSum p[4];
    for (int c = 0; c < 4; ++c) p[c] = kahan_sum(x.data() + 256 * c, c < 3 ? 256 : 232);
    kahan_merge(p[0], p[1]);
    kahan_merge(p[2], p[3]);
    kahan_merge(p[0], p[2]);
    EXPECT_EQ(bits(kahan_sum_chunked(x.data(), n, chunk)), bits(kahan_value(p[0])));
    EXPECT_EQ(bits(kahan_sum_chunked(x.data(), 0, chunk)), 0u);
    // Strided: elements x[0], x[2], ... form the same recipe on the compacted array.
    std::vector<float> even;
    for (int64_t i = 0; i < n; i += 2) even.push_back(x[i]);
    EXPECT_EQ(bits(kahan_sum_chunked(x.data(), n / 2, 64, 2)),
              bits(kahan_sum_chunked(even.data(), n / 2, 64)));
}

TEST(AccumKahan, SliceStackEqualsScalarTree) {
    const int64_t n = 37, len = 5;
    std::vector<float> x = wide(n * len, 11);
    std::vector<KahanSum> leaves(n * len);
    for (int64_t i = 0; i < n * len; ++i)
        leaves[i] = KahanSum{x[i], x[(i * 13) % (n * len)] * 1e-8f};
    const std::vector<KahanSum> slots =
        test::slice_stack(leaves, n, len, kahan_tree_push, kahan_tree_finish);
    std::vector<float> out(len);
    kahan_value_row(slots.data(), out.data(), len);
    for (int64_t i = 0; i < len; ++i) {
        KahanSum want = kahan_tree_combine(leaves.data() + i, n, len);
        EXPECT_EQ(bits(slots[i].sum), bits(want.sum));
        EXPECT_EQ(bits(slots[i].comp), bits(want.comp));
        EXPECT_EQ(bits(out[i]), bits(kahan_value(want)));
    }
}

TEST(AccumKahan, RowHelpersEqualScalar) {
    const int64_t rows = 50, len = 7;
    std::vector<float> x = wide(rows * len, 5);
    std::vector<KahanSum> acc(len);
    kahan_init_row(acc.data(), len);
    for (int64_t r = 0; r < rows; ++r) kahan_add_row(acc.data(), x.data() + r * len, len);
    for (int64_t i = 0; i < len; ++i) {
        KahanSum want = kahan_sum(x.data() + i, rows, len);
        EXPECT_EQ(bits(acc[i].sum), bits(want.sum));
        EXPECT_EQ(bits(acc[i].comp), bits(want.comp));
    }
}

TEST(AccumKahan, MoreAccurateThanPlainSummation) {
    std::mt19937_64 g(test::test_seed() + 1);
    int strictly_better = 0;
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<float> x = ill_conditioned(3000, g);
        const int64_t n = static_cast<int64_t>(x.size());
        const double exact = exact_sum(x.data(), n);  // correctly rounded
        const double plain_err = std::fabs(sum_sequential(x.data(), n) - exact);
        const double kahan_err = std::fabs(kahan_value(kahan_sum(x.data(), n)) - exact);
        const double chunk_err = std::fabs(kahan_sum_chunked(x.data(), n, 256) - exact);
        const double tree_err =
            std::fabs(reduce_tree_combine(x.data(), n) - exact);  // plain tree over elements
        EXPECT_LE(kahan_err, plain_err) << "trial " << trial;
        EXPECT_LE(chunk_err, tree_err) << "trial " << trial;
        // Neumaier: |err| <= 2u|s| + O(n u^2) sum|x|: a few ulps of the result here.
        EXPECT_LE(kahan_err, 4.0 * std::fabs(exact) * test::kEps32) << "trial " << trial;
        strictly_better += kahan_err < plain_err;
    }
    EXPECT_GE(strictly_better, 15);
}

TEST(AccumKahan, SpecialValuesBehaveLikePlainSum) {
    const float big = 3.0e38f;
    std::vector<std::vector<float>> cases = {{1.0f, INFINITY},
                                             {INFINITY, -INFINITY},
                                             {big, big},
                                             {-big, -big, 1.0f},
                                             {1.0f, std::numeric_limits<float>::quiet_NaN()}};
    for (const auto& x : cases) {
        const int64_t n = static_cast<int64_t>(x.size());
        const float plain = sum_sequential(x.data(), n);
        const float got = kahan_value(kahan_sum(x.data(), n));
        if (std::isnan(plain))
            EXPECT_TRUE(std::isnan(got));
        else
            EXPECT_EQ(bits(got), bits(plain));
    }
    EXPECT_EQ(bits(kahan_value(kahan_sum(nullptr, 0))), 0u);
}

}  // namespace
}  // namespace dt::kernels::common
