// SPDX-License-Identifier: MIT
// Pins the accumulation modes of linear.wgrad and linear.dgrad (kernels/linear.h):
// - kahan, exact, permuted equal the recipe evaluated here from the test's own float products
//   (leaves of wgrad, terms of dgrad) bit for bit, on every GEMM ISA path (dgrad permuted is a
//   GEMM);
// - every mode lies within its derived bound of the double reference: c * eps32 * (the same sum
//   over |terms|), wgrad c = 1 (product) + (tree depth | 1 | N) + 1 for tree | kahan, exact |
//   permuted, G + ceil(N / G) + 1 for atomic (partials of G samples); dgrad c = O + 1, or 3 for
//   kahan and exact, min(O, C) + ceil(O / C) for atomic (chunk partials of C features);
// - tree, kahan, exact, permuted give identical bits at 1, 2, 3, 4 and 7 threads;
// - exact: permuting the samples leaves dw bit-identical and permutes the rows of dx;
// - kahan is more accurate than tree on ill-conditioned sums (and within its tighter bound);
// - permuted: same key -> same bits, another key -> other bits;
// - atomic under contention (5 calls at 2 and 4 threads): every call within that bound; with at
//   most two partials per element (N <= 2G, O <= 2C) every call has the recipe's bits (two
//   partials commute); the number of distinct results is printed.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"
#include "kernels/ref/linear_ref.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using test::absd, test::eps_scaled;
using test::total_error;
using test::kAllModes, test::kDeterministicModes, test::accum_mode_name;

constexpr uint64_t kKey = 0x5eedull;

// 1, primes, around GEMM tiles, the wgrad chunk (512) and groups of 8 samples; SmallCNN's fc1/fc2.
const LinearParams kCases[] = {{.n = 1, .in = 1, .out = 1},     {.n = 3, .in = 5, .out = 2},
                               {.n = 7, .in = 31, .out = 10},   {.n = 8, .in = 32, .out = 16},
                               {.n = 17, .in = 33, .out = 9},   {.n = 16, .in = 511, .out = 3},
                               {.n = 33, .in = 513, .out = 65}, {.n = 2, .in = 1025, .out = 7},
                               {.n = 128, .in = 288, .out = 32}, {.n = 128, .in = 32, .out = 10}};

std::string describe(const LinearParams& p) {
    return "n=" + std::to_string(p.n) + " in=" + std::to_string(p.in) +
           " out=" + std::to_string(p.out);
}

struct Data {
    std::vector<float> x, w, dy;
};

Data make_data(const LinearParams& p, uint64_t seed) {
    return Data{test::uniform_floats(p.n * p.in, -1, 1, seed, 1),
                test::uniform_floats(p.out * p.in, -1, 1, seed, 2),
                test::uniform_floats(p.n * p.out, -1, 1, seed, 4)};
}

struct Grads {
    std::vector<float> dx, dw;
};

Grads run(const Data& d, LinearParams p, AccumMode mode, uint64_t key = kKey) {
    p.accum = common::accum_spec(mode, key);
    Grads g{std::vector<float>(p.n * p.in, 9.0f), std::vector<float>(p.out * p.in, 9.0f)};
    cpu::linear_backward_data(d.dy.data(), d.w.data(), g.dx.data(), p);
    cpu::linear_backward_weight(d.x.data(), d.dy.data(), g.dw.data(), p);
    return g;
}

/// The mode's recipe over a list of float terms t[0..n) (kahan: the tree of (t, +0) pairs when
/// `tree`, else kahan_add in order; exact; permuted with the order of `key`).
float own_sum(const std::vector<float>& t, AccumMode mode, uint64_t key, bool tree) {
    const int64_t n = static_cast<int64_t>(t.size());
    if (mode == AccumMode::kKahan) {
        if (!tree) return common::kahan_value(common::kahan_sum(t.data(), n));
        std::vector<common::KahanSum> k(t.size());
        for (std::size_t i = 0; i < t.size(); ++i) k[i] = common::KahanSum{t[i], 0.0f};
        return common::kahan_value(common::kahan_tree_combine(k.data(), n));
    }
    if (mode == AccumMode::kExact) {
        common::ExactAcc a;
        common::exact_init(a);
        for (float v : t) common::exact_add(a, v);  // one term at a time, no array helper
        return common::exact_value(a);
    }
    std::vector<uint32_t> order(t.size());
    common::permute_order(order.data(), n, key);
    float acc = 0.0f;
    for (uint32_t k : order) acc = acc + t[k];
    return acc;
}

Grads own(const Data& d, const LinearParams& p, AccumMode mode, uint64_t key) {
    Grads g{std::vector<float>(p.n * p.in), std::vector<float>(p.out * p.in)};
    std::vector<float> t(p.out);
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t i = 0; i < p.in; ++i) {
            if (mode == AccumMode::kPermuted) {  // the GEMM's fma chain, over o in pi order
                std::vector<uint32_t> pi(static_cast<std::size_t>(p.out));
                common::permute_order(pi.data(), p.out, key);
                float acc = 0.0f;
                for (uint32_t o : pi) acc = std::fma(d.dy[s * p.out + o], d.w[o * p.in + i], acc);
                g.dx[s * p.in + i] = acc;
                continue;
            }
            for (int64_t o = 0; o < p.out; ++o) t[o] = d.dy[s * p.out + o] * d.w[o * p.in + i];
            g.dx[s * p.in + i] = own_sum(t, mode, key, false);
        }
    std::vector<float> leaves(p.n);
    for (int64_t o = 0; o < p.out; ++o)
        for (int64_t i = 0; i < p.in; ++i) {
            for (int64_t s = 0; s < p.n; ++s) leaves[s] = d.dy[s * p.out + o] * d.x[s * p.in + i];
            g.dw[o * p.in + i] = own_sum(leaves, mode, key, true);
        }
    return g;
}

/// The atomic recipe with the partials added in ascending order from +0 (with at most two
/// partials, the bits of every order): dgrad partials are fma chains over chunks of
/// kLinearAtomicChunk features, wgrad partials +0 + the products of kLinearAtomicGroup samples.
Grads own_atomic(const Data& d, const LinearParams& p) {
    Grads g{std::vector<float>(p.n * p.in, 0.0f), std::vector<float>(p.out * p.in, 0.0f)};
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t i = 0; i < p.in; ++i)
            for (int64_t o0 = 0; o0 < p.out; o0 += kLinearAtomicChunk) {
                float part = 0.0f;
                for (int64_t o = o0; o < std::min(p.out, o0 + kLinearAtomicChunk); ++o)
                    part = std::fma(d.dy[s * p.out + o], d.w[o * p.in + i], part);
                g.dx[s * p.in + i] = g.dx[s * p.in + i] + part;
            }
    for (int64_t o = 0; o < p.out; ++o)
        for (int64_t i = 0; i < p.in; ++i)
            for (int64_t s0 = 0; s0 < p.n; s0 += kLinearAtomicGroup) {
                float part = 0.0f;
                for (int64_t s = s0; s < std::min(p.n, s0 + kLinearAtomicGroup); ++s)
                    part = part + d.dy[s * p.out + o] * d.x[s * p.in + i];
                g.dw[o * p.in + i] = g.dw[o * p.in + i] + part;
            }
    return g;
}

// ---- the derived bound (EveryModeWithinItsDerivedBound, AtomicStaysWithinItsBound...) ----

/// The double reference of both grads, and the same sums over |terms| (the bound's magnitudes).
struct Reference {
    std::vector<double> dx, dxm, dw, dwm;
};

Reference reference(const Data& d, const LinearParams& p) {
    const auto x = test::to_double(d.x), w = test::to_double(d.w), dy = test::to_double(d.dy);
    const auto ax = absd(d.x), aw = absd(d.w), ady = absd(d.dy);
    Reference r{std::vector<double>(p.n * p.in), std::vector<double>(p.n * p.in),
                std::vector<double>(p.out * p.in), std::vector<double>(p.out * p.in)};
    ref::linear_backward_data(dy.data(), w.data(), r.dx.data(), p);
    ref::linear_backward_data(ady.data(), aw.data(), r.dxm.data(), p);
    ref::linear_backward_weight(x.data(), dy.data(), r.dw.data(), p);
    ref::linear_backward_weight(ax.data(), ady.data(), r.dwm.data(), p);
    return r;
}

/// Both grads within mode m's bound c * eps32 * sum|terms| (c: roundings a term can meet, + 1):
/// wgrad 1 (product) + (tree depth | 1 | N) + 1 for tree | kahan, exact | permuted, and
/// G + ceil(N / G) + 1 for atomic (G = min(N, kLinearAtomicGroup) samples per partial, the
/// partials added in any order); dgrad O + 1 for tree and permuted (one fma chain), 3 for kahan
/// and exact, min(O, C) + ceil(O / C) for atomic (an fma chain over a chunk of C =
/// kLinearAtomicChunk features, then ceil(O / C) - 1 adds of the chunk partials in any order).
void expect_within_bound(const Grads& g, const Reference& r, const LinearParams& p, AccumMode m) {
    const bool tight = m == AccumMode::kKahan || m == AccumMode::kExact;
    const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
    const double G = std::min<double>(p.n, kLinearAtomicGroup);
    const double C = std::min<double>(p.out, kLinearAtomicChunk);
    const double over_n = tight ? 1 : m == AccumMode::kTree ? depth : p.n;  // the sum over s
    const double cw = m == AccumMode::kAtomic ? G + std::ceil(p.n / G) + 1 : 1 + over_n + 1;
    const double cd = m == AccumMode::kAtomic ? C + std::ceil(p.out / C) : tight ? 3 : p.out + 1;
    EXPECT_TRUE(
        test::within_bound(g.dw.data(), r.dw.data(), eps_scaled(r.dwm, cw).data(), p.out * p.in))
        << "wgrad";
    EXPECT_TRUE(
        test::within_bound(g.dx.data(), r.dx.data(), eps_scaled(r.dxm, cd).data(), p.n * p.in))
        << "dgrad";
}

TEST(LinearModes, KahanExactPermutedMatchTheirRecipeBitwiseOnEveryIsa) {
    const CpuIsa saved = cpu::cpu_isa();
    for (const LinearParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 20);
        for (AccumMode m : {AccumMode::kKahan, AccumMode::kExact, AccumMode::kPermuted}) {
            SCOPED_TRACE(accum_mode_name(m));
            const Grads want = own(d, p, m, kKey);
            for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
                if (!cpu::cpu_isa_set(isa)) continue;
                SCOPED_TRACE(cpu::cpu_isa_name(isa));
                const Grads g = run(d, p, m);
                ASSERT_TRUE(test::bitwise_equal(g.dw, want.dw)) << "wgrad";
                ASSERT_TRUE(test::bitwise_equal(g.dx, want.dx)) << "dgrad";
            }
        }
    }
    cpu::cpu_isa_set(saved);
}

TEST(LinearModes, EveryModeWithinItsDerivedBound) {
    for (const LinearParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 21);
        const Reference r = reference(d, p);
        for (AccumMode m : kAllModes) {
            SCOPED_TRACE(accum_mode_name(m));
            expect_within_bound(run(d, p, m), r, p, m);
        }
    }
}

TEST(LinearModes, ThreadCountChangesNoBitInDeterministicModes) {
    for (const LinearParams& p : {LinearParams{.n = 128, .in = 1568, .out = 128},
                                  LinearParams{.n = 37, .in = 700, .out = 10}}) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 22);
        for (AccumMode m : kDeterministicModes) {
            SCOPED_TRACE(accum_mode_name(m));
            omp_set_num_threads(1);
            const Grads first = run(d, p, m);
            for (int threads : {2, 3, 4, 7}) {
                omp_set_num_threads(threads);
                const Grads g = run(d, p, m);
                ASSERT_TRUE(test::bitwise_equal(g.dx, first.dx)) << "dgrad, threads=" << threads;
                ASSERT_TRUE(test::bitwise_equal(g.dw, first.dw)) << "wgrad, threads=" << threads;
            }
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

TEST(LinearModes, ExactIsInvariantToTheOrderOfSamples) {
    const LinearParams p{.n = 45, .in = 70, .out = 12};
    const Data d = make_data(p, test::test_seed() + 23);
    std::vector<int64_t> perm(p.n);
    for (int64_t j = 0; j < p.n; ++j) perm[j] = (7 * j + 3) % p.n;  // 7 is coprime to 45
    Data e = d;
    for (int64_t j = 0; j < p.n; ++j) {
        std::copy_n(d.x.begin() + perm[j] * p.in, p.in, e.x.begin() + j * p.in);
        std::copy_n(d.dy.begin() + perm[j] * p.out, p.out, e.dy.begin() + j * p.out);
    }
    const Grads a = run(d, p, AccumMode::kExact), b = run(e, p, AccumMode::kExact);
    ASSERT_TRUE(test::bitwise_equal(a.dw, b.dw));
    std::vector<float> dx_perm(a.dx.size());
    for (int64_t j = 0; j < p.n; ++j)
        std::copy_n(a.dx.begin() + perm[j] * p.in, p.in, dx_perm.begin() + j * p.in);
    ASSERT_TRUE(test::bitwise_equal(b.dx, dx_perm));
    ASSERT_TRUE(test::bitwise_equal(a.dw, own(d, p, AccumMode::kExact, 0).dw));
    EXPECT_FALSE(test::bitwise_equal(run(d, p, AccumMode::kTree).dw,
                                     run(e, p, AccumMode::kTree).dw));
}

TEST(LinearModes, KahanBeatsTreeOnIllConditionedSums) {
    // x = 1 makes the wgrad leaves dy exactly, dy = 1 makes the dgrad terms w exactly; both span
    // 2^-20 .. 2^20 with alternating signs.
    const LinearParams p{.n = 64, .in = 40, .out = 48};
    Data d{std::vector<float>(p.n * p.in, 1.0f),
           test::uniform_floats(p.out * p.in, 1, 2, test::test_seed() + 24, 2),
           test::uniform_floats(p.n * p.out, 1, 2, test::test_seed() + 24, 4)};
    for (std::size_t i = 0; i < d.dy.size(); ++i)
        d.dy[i] = std::ldexp(d.dy[i], static_cast<int>(i * 7 % 41) - 20) * (i % 2 ? -1 : 1);
    for (std::size_t i = 0; i < d.w.size(); ++i)
        d.w[i] = std::ldexp(d.w[i], static_cast<int>(i * 11 % 41) - 20) * (i % 3 ? -1 : 1);
    Data e = d;  // dgrad data: dy = 1
    std::fill(e.dy.begin(), e.dy.end(), 1.0f);
    const auto x = test::to_double(d.x), w = test::to_double(d.w), dy = test::to_double(d.dy);
    const auto ones = test::to_double(e.dy), aw = absd(d.w), ady = absd(d.dy);
    std::vector<double> dw(p.out * p.in), dwm(dw.size()), dx(p.n * p.in), dxm(dx.size());
    ref::linear_backward_weight(x.data(), dy.data(), dw.data(), p);
    ref::linear_backward_weight(x.data(), ady.data(), dwm.data(), p);
    ref::linear_backward_data(ones.data(), w.data(), dx.data(), p);
    ref::linear_backward_data(ones.data(), aw.data(), dxm.data(), p);
    const Grads tree = run(d, p, AccumMode::kTree), kahan = run(d, p, AccumMode::kKahan);
    const Grads tree_e = run(e, p, AccumMode::kTree), kahan_e = run(e, p, AccumMode::kKahan);
    // Neumaier: |err| <= eps |S| + 2 n eps^2 sum|terms| (terms exact here).
    const double e2 = test::kEps32 * test::kEps32;
    std::vector<double> bw(dw.size()), bd(dx.size());
    for (std::size_t i = 0; i < dw.size(); ++i)
        bw[i] = test::kEps32 * std::fabs(dw[i]) + 2.0 * p.n * e2 * dwm[i];
    for (std::size_t i = 0; i < dx.size(); ++i)
        bd[i] = test::kEps32 * std::fabs(dx[i]) + 2.0 * p.out * e2 * dxm[i];
    EXPECT_TRUE(test::within_bound(kahan.dw.data(), dw.data(), bw.data(), p.out * p.in));
    EXPECT_TRUE(test::within_bound(kahan_e.dx.data(), dx.data(), bd.data(), p.n * p.in));
    EXPECT_LT(total_error(kahan.dw, dw), total_error(tree.dw, dw));
    EXPECT_LT(total_error(kahan_e.dx, dx), total_error(tree_e.dx, dx));
}

TEST(LinearModes, PermutedReplaysItsKeyAndVariesWithIt) {
    const LinearParams p{.n = 29, .in = 50, .out = 13};
    const Data d = make_data(p, test::test_seed() + 25);
    const Grads a = run(d, p, AccumMode::kPermuted, 7), b = run(d, p, AccumMode::kPermuted, 7);
    const Grads c = run(d, p, AccumMode::kPermuted, 8);
    EXPECT_TRUE(test::bitwise_equal(a.dw, b.dw));
    EXPECT_TRUE(test::bitwise_equal(a.dx, b.dx));
    EXPECT_FALSE(test::bitwise_equal(a.dw, c.dw));
    EXPECT_FALSE(test::bitwise_equal(a.dx, c.dx));
}

TEST(LinearModes, AtomicStaysWithinItsBoundUnderContention) {
    // SmallCNN's fc1 at batch 128: 8 wgrad partials (groups of 16 samples) and 8 dgrad chunk
    // partials per element race. N = 32, O = 8: two of each, which commute (+0 + a + b ==
    // +0 + b + a), so every call has the recipe's bits. The distinct results are printed.
    for (const LinearParams& p : {LinearParams{.n = 128, .in = 288, .out = 32},
                                  LinearParams{.n = 32, .in = 288, .out = 8}}) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 26);
        const Reference r = reference(d, p);
        const bool two = p.n <= 2 * kLinearAtomicGroup && p.out <= 2 * kLinearAtomicChunk;
        const Grads want = own_atomic(d, p);
        test::atomic_calls_under_contention(
            "linear " + describe(p), [&] { return run(d, p, AccumMode::kAtomic); },
            [&](const Grads& g) {
                expect_within_bound(g, r, p, AccumMode::kAtomic);
                if (two) {
                    EXPECT_TRUE(test::bitwise_equal(g.dw, want.dw)) << "wgrad";
                    EXPECT_TRUE(test::bitwise_equal(g.dx, want.dx)) << "dgrad";
                }
            });
    }
}

}  // namespace
}  // namespace dt::kernels
