// SPDX-License-Identifier: MIT
// The accumulation modes of site loss (kernels/softmax_xent.h): the per-sample losses, row
// statistics and dlogits are the same in every mode (the class sum stays sequential); the batch
// total is within a derived bound of the double reference in every mode; tree, kahan, exact and
// permuted equal their recipes written plainly here (exact: exact_value over this test's own
// per-sample losses) and give the same bits at 1, 2, 3, 4 and 7 threads; exact does not change
// when the samples are permuted; kahan is at least as accurate as tree on an ill-conditioned
// batch; permuted replays per key and differs across keys; atomic under contention (5 calls at 2
// and 4 threads) keeps the rows, row statistics and dlogits of the tree bit for bit, its loss
// stays within the bound on every call, and with two rows (two partials, which commute) every
// call has the recipe's bits; the number of distinct losses is printed.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/fast_math.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/ref/softmax_xent_ref.h"
#include "kernels/softmax_xent.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using common::AccumSpec;
using test::kEps32;
using test::accum_mode_name;
using Vec = std::vector<float>;
using VecD = std::vector<double>;
using Labels = std::vector<int64_t>;

constexpr auto kModes = test::all_mode_specs(0xfeedu);  // tree, kahan, exact, permuted, atomic

SoftmaxXentParams params(int64_t N, int64_t K, AccumSpec a) {
    SoftmaxXentParams p{.N = N, .K = K};
    p.accum = a;
    return p;
}

std::string describe(const SoftmaxXentParams& p) {
    return std::string(accum_mode_name(p.accum.mode)) + " N=" + std::to_string(p.N) +
           " K=" + std::to_string(p.K);
}

Labels make_labels(int64_t N, int64_t K, uint32_t tag) {
    const Vec u = test::uniform_floats(N, 0.0f, 1.0f, test::test_seed(), tag);
    Labels l;
    for (float v : u) l.push_back(static_cast<int64_t>(v * static_cast<float>(K)) % K);
    return l;
}

struct Out {
    Vec rowmax, rowsum, rows, dlogits;
    float loss = 0.0f;
};

Out run(const SoftmaxXentParams& p, const Vec& l, const Labels& lab, float dloss = 0.75f) {
    Out o{Vec(p.N), Vec(p.N), Vec(p.N), Vec(p.N * p.K)};
    cpu::softmax_xent_forward(l.data(), lab.data(), o.rowmax.data(), o.rowsum.data(), o.rows.data(),
                              &o.loss, p);
    cpu::softmax_xent_backward(l.data(), lab.data(), o.rowmax.data(), o.rowsum.data(), &dloss,
                               o.dlogits.data(), p);
    return o;
}

// This test's own per-sample losses (the recipe, class sum in class order).
Vec own_rows(const SoftmaxXentParams& p, const Vec& l, const Labels& lab) {
    Vec rows;
    for (int64_t n = 0; n < p.N; ++n) {
        const float* r = l.data() + n * p.K;
        float m = r[0];
        for (int64_t k = 1; k < p.K; ++k) m = r[k] > m ? r[k] : m;
        float s = 0.0f;
        for (int64_t k = 0; k < p.K; ++k) s = s + common::dt_expf(r[k] - m);
        rows.push_back(common::dt_logf(s) - (r[lab[n]] - m));
    }
    return rows;
}

// The mode's total over the rows, written plainly (atomic at 1 thread: index order from +0).
float recipe_total(const SoftmaxXentParams& p, const Vec& rows) {
    const int64_t N = p.N;
    switch (p.accum.mode) {
        case AccumMode::kTree:
            return common::reduce_tree_combine(rows.data(), N);
        case AccumMode::kKahan: {
            std::vector<common::KahanSum> leaves;
            for (float v : rows) {
                common::KahanSum s = common::kahan_zero();
                common::kahan_add(s, v);
                leaves.push_back(s);
            }
            return common::kahan_value(common::kahan_tree_combine(leaves.data(), N));
        }
        case AccumMode::kExact: {
            common::ExactAcc a;
            common::exact_init(a);
            for (int64_t n = N - 1; n >= 0; --n) common::exact_add(a, rows[n]);
            return common::exact_value(a);
        }
        case AccumMode::kPermuted: {
            std::vector<uint32_t> order(static_cast<std::size_t>(N));
            common::permute_order(order.data(), N, p.accum.permute_key);
            float s = 0.0f;
            for (int64_t k = 0; k < N; ++k) s = s + rows[order[k]];
            return s;
        }
        case AccumMode::kAtomic: {
            float s = 0.0f;
            for (float v : rows) s = s + v;
            return s;
        }
    }
    return 0.0f;
}

struct Case {
    int64_t N, K;
    float spread;
};
const Case kCases[] = {
    {1, 1, 1.0f}, {7, 10, 5.0f}, {33, 3, 40.0f}, {128, 10, 8.0f}, {300, 100, 6.0f}};

TEST(SoftmaxXentModes, EveryModeEqualsItsRecipe) {
    for (const Case& c : kCases) {
        const Vec l = test::uniform_floats(c.N * c.K, -c.spread, c.spread, test::test_seed(), 1);
        const Labels lab = make_labels(c.N, c.K, 2);
        const Out tree = run(params(c.N, c.K, {AccumMode::kTree, 0}), l, lab);
        for (AccumSpec a : kModes) {
            const SoftmaxXentParams p = params(c.N, c.K, a);
            SCOPED_TRACE(describe(p));
            if (a.mode == AccumMode::kAtomic) omp_set_num_threads(1);
            const Out o = run(p, l, lab);
            omp_set_num_threads(omp_get_num_procs());
            const Vec rows = own_rows(p, l, lab);
            EXPECT_TRUE(test::bitwise_equal(o.rows, rows));
            EXPECT_EQ(test::bits(o.loss),
                      test::bits(recipe_total(p, rows) / static_cast<float>(p.N)));
            // Everything but the batch total is the same in every mode.
            EXPECT_TRUE(test::bitwise_equal(o.rowmax, tree.rowmax));
            EXPECT_TRUE(test::bitwise_equal(o.rowsum, tree.rowsum));
            EXPECT_TRUE(test::bitwise_equal(o.dlogits, tree.dlogits));
        }
    }
}

// Bound as in softmax_xent_test.cpp; the combination of N rows errs by at most
// (depth + 2) * eps * sum|rows| for the tree (and kahan, exact), (N + 1) * eps * sum|rows| in
// any order (permuted, atomic).
void expect_loss_within_bound(const SoftmaxXentParams& p, const Vec& l, const Labels& lab,
                              float got) {
    const int64_t N = p.N, K = p.K;
    const VecD ld = test::to_double(l);
    VecD m(N), s(N), rows(N);
    double loss = 0;
    ref::softmax_xent_forward(ld.data(), lab.data(), m.data(), s.data(), rows.data(), &loss, p);
    double b_sum = 0, abs_sum = 0;
    for (int64_t n = 0; n < N; ++n) {
        const double z = std::fabs(ld[n * K + lab[n]] - m[n]);
        b_sum += (K + 3) * kEps32 + 2 * kEps32 * (std::log(s[n]) + z + std::fabs(rows[n]));
        abs_sum += std::fabs(rows[n]);
    }
    const bool any_order =
        p.accum.mode == AccumMode::kPermuted || p.accum.mode == AccumMode::kAtomic;
    const double depth =
        any_order ? static_cast<double>(N) : std::ceil(std::log2(static_cast<double>(N)));
    const double b_loss = (b_sum + (depth + 2) * kEps32 * abs_sum) / N;
    EXPECT_TRUE(test::within_bound(&got, &loss, &b_loss, 1));
}

TEST(SoftmaxXentModes, WithinBoundOfDoubleReference) {
    for (const Case& c : kCases) {
        for (AccumSpec a : kModes) {
            const SoftmaxXentParams p = params(c.N, c.K, a);
            SCOPED_TRACE(describe(p));
            const Vec l =
                test::uniform_floats(c.N * c.K, -c.spread, c.spread, test::test_seed(), 3);
            const Labels lab = make_labels(c.N, c.K, 4);
            expect_loss_within_bound(p, l, lab, run(p, l, lab).loss);
        }
    }
}

TEST(SoftmaxXentModes, DeterministicModesIgnoreThreadCount) {
    const int64_t N = 1031, K = 37;  // above the parallel threshold
    const Vec l = test::uniform_floats(N * K, -6.0f, 6.0f, test::test_seed(), 5);
    const Labels lab = make_labels(N, K, 6);
    for (AccumSpec a : kModes) {
        if (a.mode == AccumMode::kAtomic) continue;
        const SoftmaxXentParams p = params(N, K, a);
        SCOPED_TRACE(describe(p));
        omp_set_num_threads(1);
        const Out first = run(p, l, lab);
        for (int t : {2, 3, 4, 7}) {
            omp_set_num_threads(t);
            const Out o = run(p, l, lab);
            EXPECT_EQ(test::bits(o.loss), test::bits(first.loss)) << "threads=" << t;
            EXPECT_TRUE(test::bitwise_equal(o.rows, first.rows)) << "threads=" << t;
            EXPECT_TRUE(test::bitwise_equal(o.dlogits, first.dlogits)) << "threads=" << t;
        }
        omp_set_num_threads(omp_get_num_procs());
    }
}

// Logits whose per-sample losses span many magnitudes (1e-6 .. 1e4): sums of them depend on
// the order, which the tree shows (printed) and exact must not.
Vec spread_logits(int64_t N, int64_t K, const Labels& lab, uint32_t tag) {
    Vec l = test::uniform_floats(N * K, -3.0f, 3.0f, test::test_seed(), tag);
    for (int64_t n = 0; n < N; ++n) {
        const float scale = std::ldexp(1.0f, static_cast<int>(n % 27) - 13);
        for (int64_t k = 0; k < K; ++k) l[n * K + k] = l[n * K + k] * scale;
        if (n % 5 == 0) l[n * K + lab[n]] = -1000.0f * scale;  // confidently wrong
    }
    return l;
}

TEST(SoftmaxXentModes, ExactIgnoresSampleOrder) {
    for (const auto& [N, K] : {std::pair<int64_t, int64_t>{300, 100}, {128, 10}, {37, 3}}) {
        const SoftmaxXentParams p = params(N, K, {AccumMode::kExact, 0});
        SCOPED_TRACE(describe(p));
        const Labels lab = make_labels(N, K, 7);
        const Vec l = spread_logits(N, K, lab, 8);
        std::vector<uint32_t> perm(static_cast<std::size_t>(N));
        common::permute_order(perm.data(), N, 4242);
        Vec pl(l.size());
        Labels plab(lab.size());
        for (int64_t n = 0; n < N; ++n) {
            plab[n] = lab[perm[n]];
            for (int64_t k = 0; k < K; ++k) pl[n * K + k] = l[perm[n] * K + k];
        }
        const Out a = run(p, l, lab), b = run(p, pl, plab);
        EXPECT_EQ(test::bits(a.loss), test::bits(b.loss));
        for (int64_t n = 0; n < N; ++n) {
            ASSERT_EQ(test::bits(b.rows[n]), test::bits(a.rows[perm[n]])) << n;
            for (int64_t k = 0; k < K; ++k)
                ASSERT_EQ(test::bits(b.dlogits[n * K + k]), test::bits(a.dlogits[perm[n] * K + k]));
        }
        const SoftmaxXentParams t = params(N, K, {AccumMode::kTree, 0});
        const bool tree_same = test::bits(run(t, l, lab).loss) == test::bits(run(t, pl, plab).loss);
        std::printf("[ info ] %s: tree loss %s under the sample permutation\n", describe(p).c_str(),
                    tree_same ? "unchanged" : "changes");
    }
}

// A fixed, seed-independent ill-conditioned batch: sample 0 has a loss B of about 1e11 (ulp
// 2^13), the other 4095 samples are identical with a loss v of about 1.79. Every subtree of
// small samples sums to at most 2048 v < 2^12 = ulp / 2, so each merge with B's partial sum
// rounds back to B: the tree returns B, while the true total B + 4095 v (4095 v > ulp / 2)
// rounds to B + ulp. Kahan keeps the lost parts. N = 4096: the division by N is exact.
TEST(SoftmaxXentModes, KahanAtLeastAsAccurateAsTree) {
    const int64_t N = 4096, K = 4;
    const Labels lab(N, 0);
    Vec l;
    for (int64_t n = 0; n < N; ++n) l.insert(l.end(), {0.0f, 0.5f, -0.5f, 1.0f});
    l[0] = -1e11f;
    const Out tree = run(params(N, K, {AccumMode::kTree, 0}), l, lab);
    const Out kahan = run(params(N, K, {AccumMode::kKahan, 0}), l, lab);
    long double want = 0;
    for (float v : tree.rows) want += v;
    want /= N;
    const long double et = std::fabs(tree.loss - want), ek = std::fabs(kahan.loss - want);
    std::printf("[ info ] loss |error|: tree %.4Lg, kahan %.4Lg (ulp of the loss %.4Lg)\n", et, ek,
                std::ldexp(1.0L, 1));
    EXPECT_LT(ek, et);
    EXPECT_LE(ek, 1.0L);  // correctly rounded: within half an ulp (2^13 / 4096 / 2) of total / N
}

TEST(SoftmaxXentModes, PermutedReplaysPerKeyAndDiffersAcrossKeys) {
    const int64_t N = 256, K = 10;
    const Labels lab = make_labels(N, K, 11);
    const Vec l = spread_logits(N, K, lab, 12);
    const float a = run(params(N, K, {AccumMode::kPermuted, 1}), l, lab).loss;
    EXPECT_EQ(test::bits(a), test::bits(run(params(N, K, {AccumMode::kPermuted, 1}), l, lab).loss));
    std::set<uint32_t> seen;
    for (uint64_t key = 1; key <= 6; ++key)
        seen.insert(test::bits(run(params(N, K, {AccumMode::kPermuted, key}), l, lab).loss));
    // Losses spanning 2^-13 .. 2^13 scales: six orders cannot all round alike.
    EXPECT_GE(seen.size(), 2u);
    std::printf("[ info ] permuted loss: %zu distinct results for 6 keys\n", seen.size());
}

TEST(SoftmaxXentModes, AtomicStaysWithinItsBoundUnderContention) {
    // N * K above the parallel threshold: 2048 rows with losses spanning 1e-6 .. 1e4 and with
    // ordinary ones; 2 rows of 8192 classes, whose two atomic adds commute (+0 + a + b ==
    // +0 + b + a), so every call has the recipe's loss bits. The distinct losses are printed.
    struct Racing {
        int64_t N, K;
        bool wide;  // spread_logits, else logits in [-4, 4]
    };
    for (const Racing& c :
         {Racing{2048, 16, true}, Racing{2048, 16, false}, Racing{2, 8192, false}}) {
        const SoftmaxXentParams p = params(c.N, c.K, {AccumMode::kAtomic, 0});
        SCOPED_TRACE(describe(p) + (c.wide ? " wide" : ""));
        const Labels lab = make_labels(c.N, c.K, 13);
        const Vec l = c.wide ? spread_logits(c.N, c.K, lab, 14)
                             : test::uniform_floats(c.N * c.K, -4.0f, 4.0f, test::test_seed(), 14);
        const Out tree = run(params(c.N, c.K, {AccumMode::kTree, 0}), l, lab);
        for (int t : {2, 4}) {
            SCOPED_TRACE("threads=" + std::to_string(t));
            omp_set_num_threads(t);
            std::set<uint32_t> seen;
            for (int call = 0; call < 5; ++call) {
                const Out o = run(p, l, lab);
                expect_loss_within_bound(p, l, lab, o.loss);
                for (Vec Out::*v : {&Out::rows, &Out::rowmax, &Out::rowsum, &Out::dlogits})
                    EXPECT_TRUE(test::bitwise_equal(o.*v, tree.*v));
                if (c.N == 2) {
                    EXPECT_EQ(test::bits(o.loss), test::bits(recipe_total(p, tree.rows) / 2.0f));
                }
                seen.insert(test::bits(o.loss));
            }
            std::printf("[ info ] loss atomic, %s%s, %d threads: %zu distinct results in 5 calls\n",
                        describe(p).c_str(), c.wide ? " wide" : "", t, seen.size());
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
