// SPDX-License-Identifier: MIT
// Accumulation modes of sites bn.stats and bn.backward (kernels/batchnorm2d.h): every mode within
// a derived bound of the double reference; tree, kahan, exact, permuted equal their recipes
// written here and give the same bits at 1-7 threads; exact equals exact_value of this test's own
// terms and ignores the sample order; kahan beats tree on ill-conditioned sums; permuted replays
// per key and differs across keys; atomic under contention (5 calls at 2 and 4 threads) stays
// within the bound on every call, and with two samples (two leaves per total, which commute)
// every call has the recipe's bits; the number of distinct results is printed.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/ref/batchnorm2d_ref.h"
#include "tests/support/batchnorm_bounds.h"
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

constexpr auto kModes = test::all_mode_specs(0x1234abcdu);  // tree, kahan, exact, permuted, atomic

BatchNorm2dParams with(BatchNorm2dParams p, AccumSpec a) { return p.accum = a, p; }

std::string describe(const BatchNorm2dParams& p) {
    return std::string(accum_mode_name(p.accum.mode)) + " N=" + std::to_string(p.N) +
           " C=" + std::to_string(p.C) + " HW=" + std::to_string(p.HW);
}

int64_t numel(const BatchNorm2dParams& p) { return p.N * p.C * p.HW; }

// (N, C, HW): tiny, odd, block tails, HW > kExactBinsMin, above the parallel threshold.
const BatchNorm2dParams kCases[] = {{.N = 2, .C = 1, .HW = 1},     {.N = 3, .C = 5, .HW = 7},
                                    {.N = 13, .C = 3, .HW = 25},   {.N = 3, .C = 2, .HW = 4500},
                                    {.N = 37, .C = 16, .HW = 196}, {.N = 64, .C = 9, .HW = 64}};

struct Inputs {
    Vec x, g, b, dy;
};

Inputs make_inputs(const BatchNorm2dParams& p, uint32_t tag = 0) {
    Inputs in{test::uniform_floats(numel(p), -2.0f, 2.0f, test::test_seed(), 10 + tag),
              test::uniform_floats(p.C, 0.5f, 1.5f, test::test_seed(), 11 + tag),
              test::uniform_floats(p.C, -1.0f, 1.0f, test::test_seed(), 12 + tag),
              test::uniform_floats(numel(p), -1.0f, 1.0f, test::test_seed(), 13 + tag)};
    for (int64_t i = 0; i < numel(p); ++i)  // a per-channel offset: the two passes matter
        in.x[i] = in.x[i] + 0.5f * static_cast<float>((i / p.HW) % p.C);
    return in;
}

struct Outs {
    Vec mean, var, invstd, y, dx, dgamma, dbeta;
};

// Stats, apply, backward (training), all with p.accum.
Outs run(const BatchNorm2dParams& p, const Inputs& in) {
    Outs r{Vec(p.C), Vec(p.C), Vec(p.C), Vec(numel(p)), Vec(numel(p)), Vec(p.C), Vec(p.C)};
    cpu::batchnorm2d_stats(in.x.data(), r.mean.data(), r.var.data(), r.invstd.data(), p);
    cpu::batchnorm2d_apply(in.x.data(), r.mean.data(), r.invstd.data(), in.g.data(), in.b.data(),
                           r.y.data(), p);
    cpu::batchnorm2d_backward(in.dy.data(), in.x.data(), r.mean.data(), r.invstd.data(),
                              in.g.data(), r.dx.data(), r.dgamma.data(), r.dbeta.data(), true, p);
    return r;
}

// The per-channel outputs (mean, var, invstd, dgamma, dbeta) bit for bit.
::testing::AssertionResult same_stats(const Outs& a, const Outs& b) {
    for (Vec Outs::*m : {&Outs::mean, &Outs::var, &Outs::invstd, &Outs::dgamma, &Outs::dbeta}) {
        ::testing::AssertionResult r = test::bitwise_equal(a.*m, b.*m);
        if (!r) return r;
    }
    return ::testing::AssertionSuccess();
}

void expect_same(const Outs& a, const Outs& b) {
    EXPECT_TRUE(same_stats(a, b));
    EXPECT_TRUE(test::bitwise_equal(a.y, b.y));
    EXPECT_TRUE(test::bitwise_equal(a.dx, b.dx));
}

// ---- the mode recipes written plainly: total(c) over term(k), k = (n * C + c) * HW + i ----
template <typename Term>
float recipe_total(const BatchNorm2dParams& p, int64_t c, Term term) {
    const int64_t N = p.N, HW = p.HW;
    auto k_of = [&](int64_t n, int64_t i) { return (n * p.C + c) * HW + i; };
    switch (p.accum.mode) {
        case AccumMode::kKahan: {
            std::vector<common::KahanSum> leaves;
            for (int64_t n = 0; n < N; ++n) {
                common::KahanSum s = common::kahan_zero();
                for (int64_t i = 0; i < HW; ++i) common::kahan_add(s, term(k_of(n, i)));
                leaves.push_back(s);
            }
            return common::kahan_value(common::kahan_tree_combine(leaves.data(), N));
        }
        case AccumMode::kExact: {  // every term, in reverse order
            common::ExactAcc a;
            common::exact_init(a);
            for (int64_t n = N - 1; n >= 0; --n)
                for (int64_t i = HW - 1; i >= 0; --i) common::exact_add(a, term(k_of(n, i)));
            return common::exact_value(a);
        }
        default: {  // tree, permuted, atomic at 1 thread: float leaves
            Vec leaves;
            for (int64_t n = 0; n < N; ++n) {
                float s = 0.0f;
                for (int64_t i = 0; i < HW; ++i) s = s + term(k_of(n, i));
                leaves.push_back(s);
            }
            if (p.accum.mode == AccumMode::kTree)
                return common::reduce_tree_combine(leaves.data(), N);
            std::vector<uint32_t> order(static_cast<std::size_t>(N));
            for (int64_t n = 0; n < N; ++n) order[n] = static_cast<uint32_t>(n);
            if (p.accum.mode == AccumMode::kPermuted)
                common::permute_order(order.data(), N, p.accum.permute_key);
            float s = 0.0f;
            for (int64_t j = 0; j < N; ++j) s = s + leaves[order[j]];
            return s;
        }
    }
}

// The per-channel outputs of the recipe (the elementwise formulas: batchnorm2d_test.cpp).
Outs recipe(const BatchNorm2dParams& p, const Inputs& in) {
    Outs s;
    const float count = static_cast<float>(p.N * p.HW);
    for (int64_t c = 0; c < p.C; ++c) {
        const float m = recipe_total(p, c, [&](int64_t k) { return in.x[k]; }) / count;
        const auto sq = [&](int64_t k) { return (in.x[k] - m) * (in.x[k] - m); };
        const float v = recipe_total(p, c, sq) / count, is = 1.0f / std::sqrt(v + p.eps);
        s.mean.push_back(m), s.var.push_back(v), s.invstd.push_back(is);
        s.dbeta.push_back(recipe_total(p, c, [&](int64_t k) { return in.dy[k]; }));
        s.dgamma.push_back(
            recipe_total(p, c, [&](int64_t k) { return in.dy[k] * ((in.x[k] - m) * is); }));
    }
    return s;
}

TEST(BatchNorm2dModes, DeterministicModesEqualTheirRecipes) {
    for (const BatchNorm2dParams& base : kCases) {
        for (AccumSpec a : kModes) {
            const BatchNorm2dParams p = with(base, a);
            SCOPED_TRACE(describe(p));
            const Inputs in = make_inputs(p);
            if (a.mode == AccumMode::kAtomic) omp_set_num_threads(1);  // then sample order
            const Outs r = run(p, in), s = recipe(p, in);
            omp_set_num_threads(omp_get_num_procs());
            EXPECT_TRUE(same_stats(r, s));
        }
    }
}

// The site outputs against the double reference, bounds as in batchnorm2d_test.cpp (dx is the
// same formula of them) with L terms per sum: L = HW + ceil(log2 N) + 2 for the tree and the
// more accurate kahan and exact; any order of N leaves (permuted, atomic) errs at most like a
// sequential sum, L = HW + N + 2.
void expect_within_bound(const BatchNorm2dParams& p, const Inputs& in, const Outs& r) {
    const AccumMode m = p.accum.mode;
    const VecD x = test::to_double(in.x), g = test::to_double(in.g), dy = test::to_double(in.dy);
    const int64_t n = numel(p);
    VecD mean(p.C), var(p.C), is(p.C), dx(n), dg(p.C), db(p.C);
    ref::batchnorm2d_stats(x.data(), mean.data(), var.data(), is.data(), p);
    ref::batchnorm2d_backward(dy.data(), x.data(), mean.data(), is.data(), g.data(), dx.data(),
                              dg.data(), db.data(), true, p);
    const bool any_order = m == AccumMode::kPermuted || m == AccumMode::kAtomic;
    const double L =
        p.HW + 2 +
        (any_order ? static_cast<double>(p.N) : std::ceil(std::log2(static_cast<double>(p.N))));
    const test::BatchNormBounds bd = test::batchnorm_bounds(p, L, x, dy, mean, var, is);
    EXPECT_TRUE(test::within_bound(r.mean.data(), mean.data(), bd.mean.data(), p.C));
    EXPECT_TRUE(test::within_bound(r.var.data(), var.data(), bd.var.data(), p.C));
    EXPECT_TRUE(test::within_bound(r.invstd.data(), is.data(), bd.invstd.data(), p.C));
    EXPECT_TRUE(test::within_bound(r.dbeta.data(), db.data(), bd.dbeta.data(), p.C));
    EXPECT_TRUE(test::within_bound(r.dgamma.data(), dg.data(), bd.dgamma.data(), p.C));
}

TEST(BatchNorm2dModes, WithinBoundOfDoubleReference) {
    for (const BatchNorm2dParams& base : kCases) {
        for (AccumSpec a : kModes) {
            const BatchNorm2dParams p = with(base, a);
            SCOPED_TRACE(describe(p));
            const Inputs in = make_inputs(p, 1);
            expect_within_bound(p, in, run(p, in));
        }
    }
}

TEST(BatchNorm2dModes, DeterministicModesIgnoreThreadCount) {
    for (const BatchNorm2dParams& base : {BatchNorm2dParams{.N = 37, .C = 16, .HW = 196},
                                          BatchNorm2dParams{.N = 5, .C = 3, .HW = 4500},
                                          BatchNorm2dParams{.N = 300, .C = 130, .HW = 1}}) {
        for (AccumSpec a : kModes) {
            if (a.mode == AccumMode::kAtomic) continue;
            const BatchNorm2dParams p = with(base, a);
            SCOPED_TRACE(describe(p));
            const Inputs in = make_inputs(p, 2);
            omp_set_num_threads(1);
            const Outs first = run(p, in);
            for (int t : {2, 3, 4, 7}) {
                SCOPED_TRACE("threads=" + std::to_string(t));
                omp_set_num_threads(t);
                expect_same(run(p, in), first);
            }
            omp_set_num_threads(omp_get_num_procs());
        }
    }
}

// Sample n of the permuted batch is sample perm[n] of the original.
Vec permute_samples(const Vec& v, const std::vector<uint32_t>& perm, int64_t per_sample) {
    Vec out;
    for (uint32_t src : perm)
        out.insert(out.end(), v.data() + src * per_sample, v.data() + (src + 1) * per_sample);
    return out;
}

TEST(BatchNorm2dModes, ExactIgnoresSampleOrder) {
    for (const BatchNorm2dParams& base : {BatchNorm2dParams{.N = 37, .C = 16, .HW = 196},
                                          BatchNorm2dParams{.N = 9, .C = 3, .HW = 25},
                                          BatchNorm2dParams{.N = 4, .C = 2, .HW = 4500}}) {
        const BatchNorm2dParams p = with(base, {AccumMode::kExact, 0});
        SCOPED_TRACE(describe(p));
        const Inputs in = make_inputs(p, 3);
        std::vector<uint32_t> perm(static_cast<std::size_t>(p.N));
        common::permute_order(perm.data(), p.N, 99);
        const int64_t per = p.C * p.HW;
        const Inputs pin{permute_samples(in.x, perm, per), in.g, in.b,
                         permute_samples(in.dy, perm, per)};
        const Outs a = run(p, in), b = run(p, pin);
        EXPECT_TRUE(same_stats(a, b));
        EXPECT_TRUE(test::bitwise_equal(permute_samples(a.y, perm, per), b.y));
        EXPECT_TRUE(test::bitwise_equal(permute_samples(a.dx, perm, per), b.dx));
        // The tree is order-sensitive on the same inputs (printed: the sanity of the inputs).
        const BatchNorm2dParams t = with(base, {AccumMode::kTree, 0});
        const bool tree_same = same_stats(run(t, in), run(t, pin));
        std::printf("[ info ] %s: tree statistics %s under the sample permutation\n",
                    describe(p).c_str(), tree_same ? "unchanged" : "change");
    }
}

// The exact totals equal exact_value over terms computed here, also on adversarial inputs:
// cancelling +-2^40 pairs in different samples (the tree loses everything small), values
// spanning 2^-60 .. 2^40, subnormals and signed zeros.
TEST(BatchNorm2dModes, ExactEqualsExactValueOfTheTerms) {
    const BatchNorm2dParams p{.N = 6, .C = 3, .HW = 50, .accum = {AccumMode::kExact, 0}};
    Inputs in = make_inputs(p, 4);
    const Vec u = test::uniform_floats(numel(p), -1.0f, 1.0f, test::test_seed(), 40);
    for (int64_t k = 0; k < numel(p); ++k) {
        const int64_t n = k / (p.C * p.HW), i = k % p.HW;
        if (i % 5 == 0) in.dy[k] = (n % 2 ? -1.0f : 1.0f) * 1099511627776.0f;  // +-2^40 pairs
        if (i % 5 == 1) in.dy[k] = std::ldexp(u[k], static_cast<int>(k % 100) - 60);
        if (i % 7 == 2) in.dy[k] = 1e-40f * u[k];  // subnormal
        if (i % 11 == 3) in.dy[k] = (k % 2) ? -0.0f : 0.0f;
        if (i % 5 == 4) in.x[k] = in.x[k] * 4096.0f;  // spread for the mean and variance
    }
    const Outs r = run(p, in);
    const float count = static_cast<float>(p.N * p.HW);
    for (int64_t c = 0; c < p.C; ++c) {
        common::ExactAcc sx, sv, sdy, sdg;
        for (common::ExactAcc* a : {&sx, &sv, &sdy, &sdg}) common::exact_init(*a);
        for (int64_t k = 0; k < numel(p); ++k) {
            if ((k / p.HW) % p.C != c) continue;
            const float d = in.x[k] - r.mean[c];
            common::exact_add(sx, in.x[k]);
            common::exact_add(sv, d * d);
            common::exact_add(sdy, in.dy[k]);
            common::exact_add(sdg, in.dy[k] * ((in.x[k] - r.mean[c]) * r.invstd[c]));
        }
        EXPECT_EQ(test::bits(r.mean[c]), test::bits(common::exact_value(sx) / count)) << c;
        EXPECT_EQ(test::bits(r.var[c]), test::bits(common::exact_value(sv) / count)) << c;
        EXPECT_EQ(test::bits(r.dbeta[c]), test::bits(common::exact_value(sdy))) << c;
        EXPECT_EQ(test::bits(r.dgamma[c]), test::bits(common::exact_value(sdg))) << c;
    }
}

// Errors of the channel sums against long-double sums of the same float terms, on x and dy of
// the form +-(1000 + u) with random or alternating signs (heavy cancellation). The backward gets
// the same mean and invstd in both modes, so its terms are the same floats. Per sum (mean * count,
// dbeta, dgamma), kahan's total and largest error over the channels must not exceed the tree's.
TEST(BatchNorm2dModes, KahanAtLeastAsAccurateAsTree) {
    const BatchNorm2dParams base{.N = 64, .C = 8, .HW = 196};
    const int64_t C = base.C, n = numel(base);
    Inputs in = make_inputs(base, 5);
    const Vec u = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 50);
    const Vec w = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 51);
    for (int64_t k = 0; k < n; ++k) {
        in.x[k] = (w[k] < 0.0f ? -1.0f : 1.0f) * (1000.0f + u[k]);
        in.dy[k] = (((k / 3) % 2) ? -1.0f : 1.0f) * (1000.0f + w[k]);
    }
    const Outs t = run(base, in);  // tree mean and invstd: the backward's inputs in both modes
    std::vector<long double> want(3 * C, 0.0L), err[2];  // per (sum, channel); tree, kahan
    for (int64_t k = 0; k < n; ++k) {
        const int64_t c = (k / base.HW) % C;
        want[c] += in.x[k];
        want[C + c] += in.dy[k];
        want[2 * C + c] += in.dy[k] * ((in.x[k] - t.mean[c]) * t.invstd[c]);  // the float term
    }
    for (int m = 0; m < 2; ++m) {
        const BatchNorm2dParams p = with(base, {m ? AccumMode::kKahan : AccumMode::kTree, 0});
        Vec dx(n), dg(C), db(C), mm(C), vv(C), ii(C);
        cpu::batchnorm2d_backward(in.dy.data(), in.x.data(), t.mean.data(), t.invstd.data(),
                                  in.g.data(), dx.data(), dg.data(), db.data(), true, p);
        cpu::batchnorm2d_stats(in.x.data(), mm.data(), vv.data(), ii.data(), p);
        for (int64_t c = 0; c < C; ++c) {
            err[m].push_back(std::fabs(static_cast<long double>(mm[c]) * (n / C) - want[c]));
            err[m].push_back(std::fabs(db[c] - want[C + c]));
            err[m].push_back(std::fabs(dg[c] - want[2 * C + c]));
        }
    }
    const char* what[3] = {"mean*count", "dbeta", "dgamma"};
    for (int j = 0; j < 3; ++j) {
        long double sum[2] = {0, 0}, max[2] = {0, 0};
        for (int m = 0; m < 2; ++m)
            for (int64_t c = 0; c < C; ++c)
                sum[m] += err[m][3 * c + j], max[m] = std::max(max[m], err[m][3 * c + j]);
        std::printf(
            "[ info ] %s |error| total: tree %.3Lg, kahan %.3Lg; largest: tree %.3Lg, "
            "kahan %.3Lg\n",
            what[j], sum[0], sum[1], max[0], max[1]);
        EXPECT_LT(sum[1], sum[0]) << what[j];
        EXPECT_LE(max[1], max[0]) << what[j];
    }
}

TEST(BatchNorm2dModes, PermutedReplaysPerKeyAndDiffersAcrossKeys) {
    const BatchNorm2dParams base{.N = 37, .C = 16, .HW = 49};
    const Inputs in = make_inputs(base, 6);
    const Outs a = run(with(base, {AccumMode::kPermuted, 5}), in);
    expect_same(run(with(base, {AccumMode::kPermuted, 5}), in), a);
    int differing_keys = 0;
    for (uint64_t key : {6u, 7u, 8u}) {
        differing_keys += same_stats(a, run(with(base, {AccumMode::kPermuted, key}), in)) ? 0 : 1;
    }
    EXPECT_EQ(differing_keys, 3);  // 16 channels x 4 sums of 37 leaves: some bit must move
}

TEST(BatchNorm2dModes, AtomicStaysWithinItsBoundUnderContention) {
    // Above the parallel threshold: 128 leaves per channel total race; 2 samples: two leaves per
    // total, which commute (+0 + a + b == +0 + b + a), so every call has the recipe's bits (the
    // threads own different samples). The distinct results (var, dgamma) are printed.
    for (const BatchNorm2dParams& base : {BatchNorm2dParams{.N = 128, .C = 16, .HW = 196},
                                          BatchNorm2dParams{.N = 2, .C = 16, .HW = 1024}}) {
        const BatchNorm2dParams p = with(base, {AccumMode::kAtomic, 0});
        SCOPED_TRACE(describe(p));
        const Inputs in = make_inputs(p, 7);
        const Outs want = recipe(p, in);
        for (int t : {2, 4}) {
            SCOPED_TRACE("threads=" + std::to_string(t));
            omp_set_num_threads(t);
            std::set<std::vector<uint32_t>> seen;
            for (int call = 0; call < 5; ++call) {
                const Outs r = run(p, in);
                expect_within_bound(p, in, r);
                if (p.N == 2) {
                    EXPECT_TRUE(same_stats(r, want));
                }
                std::vector<uint32_t> key;
                for (float f : r.var) key.push_back(test::bits(f));     // var depends on mean
                for (float f : r.dgamma) key.push_back(test::bits(f));  // dgamma on dbeta's threads
                seen.insert(key);
            }
            std::printf("[ info ] bn atomic, %s, %d threads: %zu distinct results in 5 calls\n",
                        describe(p).c_str(), t, seen.size());
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
