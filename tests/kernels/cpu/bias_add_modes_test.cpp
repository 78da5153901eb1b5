// SPDX-License-Identifier: MIT
// Pins the accumulation modes of bias.grad (kernels/bias_add.h):
// - kahan, exact, permuted equal the recipe evaluated here (own leaves, own exact sum of all
//   elements) bit for bit;
// - every mode lies within its derived bound of the double reference: c * eps32 * sum|dy| with
//   c = P + depth + 2 (tree), 3 (kahan), 1 (exact), P + N + 2 (permuted), G * P + ceil(N / G) + 2
//   (atomic: partials of G samples);
// - tree, kahan, exact, permuted give identical bits at 1, 2, 3, 4 and 7 threads;
// - exact: permuting the samples leaves db bit-identical;
// - kahan is more accurate than tree on ill-conditioned sums (and within its tighter bound);
// - permuted: same key -> same bits, another key -> other bits;
// - atomic under contention (5 calls at 2 and 4 threads): every call within that bound; with two
//   partials per channel (N <= 2G) every call has the recipe's bits (two partials commute); the
//   number of distinct results is printed.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "kernels/bias_add.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/ref/bias_add_ref.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using test::bits_of, test::total_error;
using test::kAllModes, test::kDeterministicModes, test::accum_mode_name;

constexpr uint64_t kKey = 0xb1a5ull;

// (n, c, p): tails of the 8-sample leaf groups, P = 1 (linear), SmallCNN-like maps, rows long
// enough for the exact mode's array path (P >= 256).
const BiasAddParams kCases[] = {{.n = 1, .c = 1, .p = 1},    {.n = 3, .c = 2, .p = 5},
                                {.n = 8, .c = 3, .p = 7},    {.n = 9, .c = 4, .p = 1},
                                {.n = 17, .c = 5, .p = 49},  {.n = 128, .c = 10, .p = 1},
                                {.n = 37, .c = 16, .p = 196}, {.n = 5, .c = 3, .p = 784}};

std::string describe(const BiasAddParams& p) {
    return "n=" + std::to_string(p.n) + " c=" + std::to_string(p.c) + " p=" + std::to_string(p.p);
}

std::vector<float> run(const std::vector<float>& dy, BiasAddParams p, AccumMode mode,
                       uint64_t key = kKey) {
    p.accum = common::accum_spec(mode, key);
    std::vector<float> db(p.c, 9.0f);
    cpu::bias_add_backward(dy.data(), db.data(), p);
    return db;
}

/// The mode's recipe evaluated here: kahan, exact, permuted, or atomic with its partials added in
/// ascending order (with at most two partials, the bits of every order).
std::vector<float> own(const std::vector<float>& dy, const BiasAddParams& p, AccumMode mode,
                       uint64_t key) {
    std::vector<float> db(p.c);
    std::vector<uint32_t> order(p.n);
    common::permute_order(order.data(), p.n, key);
    for (int64_t c = 0; c < p.c; ++c) {
        if (mode == AccumMode::kExact) {  // every element, one at a time
            common::ExactAcc a;
            common::exact_init(a);
            for (int64_t s = 0; s < p.n; ++s)
                for (int64_t q = 0; q < p.p; ++q) common::exact_add(a, dy[(s * p.c + c) * p.p + q]);
            db[c] = common::exact_value(a);
        } else if (mode == AccumMode::kKahan) {
            std::vector<common::KahanSum> leaves(p.n);
            for (int64_t s = 0; s < p.n; ++s)
                leaves[s] = common::kahan_sum(dy.data() + (s * p.c + c) * p.p, p.p);
            db[c] = common::kahan_value(common::kahan_tree_combine(leaves.data(), p.n));
        } else if (mode == AccumMode::kAtomic) {  // partials: +0, samples, positions ascending
            db[c] = 0.0f;
            for (int64_t s0 = 0; s0 < p.n; s0 += kBiasAddAtomicGroup) {
                float part = 0.0f;
                for (int64_t s = s0; s < std::min(p.n, s0 + kBiasAddAtomicGroup); ++s)
                    for (int64_t q = 0; q < p.p; ++q) part = part + dy[(s * p.c + c) * p.p + q];
                db[c] = db[c] + part;
            }
        } else {
            std::vector<float> leaves(p.n);
            for (int64_t s = 0; s < p.n; ++s) {
                float acc = 0.0f;
                for (int64_t q = 0; q < p.p; ++q) acc = acc + dy[(s * p.c + c) * p.p + q];
                leaves[s] = acc;
            }
            float acc = 0.0f;
            for (uint32_t s : order) acc = acc + leaves[s];
            db[c] = acc;
        }
    }
    return db;
}

/// db within mode m's bound c * eps32 * sum|dy| of the double reference: c = P + depth + 2
/// (tree), 3 (kahan), 1 (exact), P + N + 2 (permuted), G * P + ceil(N / G) + 2 (atomic: G =
/// min(N, kBiasAddAtomicGroup) samples per partial, the partials added in any order).
void expect_within_bound(const std::vector<float>& db, const std::vector<float>& dy,
                         const BiasAddParams& p, AccumMode m) {
    std::vector<double> dyd = test::to_double(dy), want(p.c), mag(p.c), bound(p.c);
    ref::bias_add_backward(dyd.data(), want.data(), p);
    for (auto& v : dyd) v = std::fabs(v);
    ref::bias_add_backward(dyd.data(), mag.data(), p);
    const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
    const double G = std::min<double>(p.n, kBiasAddAtomicGroup);
    const double k = m == AccumMode::kTree     ? p.p + depth + 2
                     : m == AccumMode::kKahan  ? 3
                     : m == AccumMode::kExact  ? 1
                     : m == AccumMode::kAtomic ? G * p.p + std::ceil(p.n / G) + 2
                                               : p.p + p.n + 2;
    for (int64_t c = 0; c < p.c; ++c) bound[c] = k * test::kEps32 * mag[c];
    EXPECT_TRUE(test::within_bound(db.data(), want.data(), bound.data(), p.c));
}

TEST(BiasAddModes, KahanExactPermutedMatchTheirRecipeBitwise) {
    for (const BiasAddParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 30);
        for (AccumMode m : {AccumMode::kKahan, AccumMode::kExact, AccumMode::kPermuted}) {
            SCOPED_TRACE(accum_mode_name(m));
            ASSERT_TRUE(test::bitwise_equal(run(dy, p, m), own(dy, p, m, kKey)));
        }
    }
}

TEST(BiasAddModes, EveryModeWithinItsDerivedBound) {
    for (const BiasAddParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 31);
        for (AccumMode m : kAllModes) {
            SCOPED_TRACE(accum_mode_name(m));
            expect_within_bound(run(dy, p, m), dy, p, m);
        }
    }
}

TEST(BiasAddModes, ThreadCountChangesNoBitInDeterministicModes) {
    for (const BiasAddParams& p : {BiasAddParams{.n = 129, .c = 33, .p = 196},
                                   BiasAddParams{.n = 4099, .c = 64, .p = 1}}) {
        SCOPED_TRACE(describe(p));
        const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 32);
        for (AccumMode m : kDeterministicModes) {
            SCOPED_TRACE(accum_mode_name(m));
            omp_set_num_threads(1);
            const auto first = run(dy, p, m);
            for (int threads : {2, 3, 4, 7}) {
                omp_set_num_threads(threads);
                ASSERT_TRUE(test::bitwise_equal(run(dy, p, m), first)) << "threads=" << threads;
            }
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

TEST(BiasAddModes, ExactIsInvariantToTheOrderOfSamples) {
    for (const BiasAddParams& p : {BiasAddParams{.n = 37, .c = 16, .p = 49},
                                   BiasAddParams{.n = 128, .c = 10, .p = 1}}) {
        SCOPED_TRACE(describe(p));
        const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 33);
        std::vector<float> e(dy.size());
        const int64_t row = p.c * p.p;
        // j -> 7j + 3 mod N (7 is coprime to N; not a reversal, which mirrors a balanced tree
        // and so leaves the tree mode's bits unchanged when N is a power of two).
        for (int64_t j = 0; j < p.n; ++j)
            std::copy_n(dy.begin() + (7 * j + 3) % p.n * row, row, e.begin() + j * row);
        const auto a = run(dy, p, AccumMode::kExact);
        ASSERT_TRUE(test::bitwise_equal(a, run(e, p, AccumMode::kExact)));
        ASSERT_TRUE(test::bitwise_equal(a, own(dy, p, AccumMode::kExact, 0)));
        EXPECT_FALSE(
            test::bitwise_equal(run(dy, p, AccumMode::kTree), run(e, p, AccumMode::kTree)));
    }
}

TEST(BiasAddModes, KahanBeatsTreeOnIllConditionedSums) {
    // Elements span 2^-20 .. 2^20 with alternating signs.
    const BiasAddParams p{.n = 64, .c = 12, .p = 9};
    auto dy = test::uniform_floats(p.n * p.c * p.p, 1, 2, test::test_seed(), 34);
    for (std::size_t i = 0; i < dy.size(); ++i)
        dy[i] = std::ldexp(dy[i], static_cast<int>(i * 7 % 41) - 20) * (i % 2 ? -1 : 1);
    std::vector<double> dyd = test::to_double(dy), want(p.c), mag(p.c), bound(p.c);
    ref::bias_add_backward(dyd.data(), want.data(), p);
    for (auto& v : dyd) v = std::fabs(v);
    ref::bias_add_backward(dyd.data(), mag.data(), p);
    const double m = static_cast<double>(p.n * p.p);
    for (int64_t c = 0; c < p.c; ++c)  // Neumaier: eps |S| + 2 m eps^2 sum|x|
        bound[c] = test::kEps32 * std::fabs(want[c]) + 2 * m * test::kEps32 * test::kEps32 * mag[c];
    const auto kahan = run(dy, p, AccumMode::kKahan), tree = run(dy, p, AccumMode::kTree);
    EXPECT_TRUE(test::within_bound(kahan.data(), want.data(), bound.data(), p.c));
    EXPECT_LT(total_error(kahan, want), total_error(tree, want));
}

TEST(BiasAddModes, PermutedReplaysItsKeyAndVariesWithIt) {
    const BiasAddParams p{.n = 40, .c = 8, .p = 3};
    const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 35);
    EXPECT_TRUE(test::bitwise_equal(run(dy, p, AccumMode::kPermuted, 7),
                                    run(dy, p, AccumMode::kPermuted, 7)));
    EXPECT_FALSE(test::bitwise_equal(run(dy, p, AccumMode::kPermuted, 7),
                                     run(dy, p, AccumMode::kPermuted, 8)));
}

TEST(BiasAddModes, AtomicStaysWithinItsBoundUnderContention) {
    // SmallCNN's first convolution bias (P = 784) and fc1's bias (P = 1) at batch 128: 8 partials
    // (groups of 16 samples) per channel race. N = 32: two partials, which commute (+0 + a + b ==
    // +0 + b + a), so every call has the recipe's bits. The distinct results are printed.
    for (const BiasAddParams& p :
         {BiasAddParams{.n = 128, .c = 16, .p = 784}, BiasAddParams{.n = 128, .c = 32, .p = 1},
          BiasAddParams{.n = 32, .c = 16, .p = 784}}) {
        SCOPED_TRACE(describe(p));
        const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 36);
        const bool two = p.n <= 2 * kBiasAddAtomicGroup;
        const auto want = own(dy, p, AccumMode::kAtomic, 0);
        for (int threads : {2, 4}) {
            SCOPED_TRACE("threads=" + std::to_string(threads));
            omp_set_num_threads(threads);
            std::set<std::string> seen;
            for (int i = 0; i < 5; ++i) {
                const auto db = run(dy, p, AccumMode::kAtomic);
                expect_within_bound(db, dy, p, AccumMode::kAtomic);
                if (two) {
                    EXPECT_TRUE(test::bitwise_equal(db, want));
                }
                seen.insert(bits_of(db));
            }
            std::cout << "[ atomic   ] bias.grad " << describe(p) << ": " << seen.size()
                      << " distinct of 5 calls (" << threads << " threads)\n";
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
