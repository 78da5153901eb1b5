// SPDX-License-Identifier: MIT
// The accumulation modes of site pool.backward (kernels/pool2d.h) for max and avg pooling: every
// mode within a derived bound of the double reference; tree, kahan, exact and permuted equal
// their recipes written plainly here (exact: exact_value over this test's own contributions)
// and give the same bits at 1, 2, 3, 4 and 7 threads; without overlap (stride >= kernel) and
// whenever every cell receives at most one contribution, every mode gives the tree's bits;
// kahan is at least as accurate as tree on cancelling contributions; permuted replays per key
// and differs across keys; atomic under contention (5 calls at 2 and 4 threads) stays within the
// bound on every call, and every cell with at most two contributions (none, one, or two, which
// commute) has the tree's bits; the number of distinct results is printed.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/pool2d.h"
#include "kernels/ref/pool2d_ref.h"
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

constexpr auto kModes = test::all_mode_specs(0x5eedu);  // tree, kahan, exact, permuted, atomic

Pool2dParams make(int64_t N, int64_t C, int64_t H, int64_t W, int k, int s, int pad) {
    Pool2dParams p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.kernel = k, p.stride = s, p.padding = pad;
    p.Ho = pool2d_out_size(H, k, s, pad);
    p.Wo = pool2d_out_size(W, k, s, pad);
    return p;
}

Pool2dParams with(Pool2dParams p, AccumSpec a) {
    p.accum = a;
    return p;
}

std::string describe(const Pool2dParams& p) {
    return std::string(accum_mode_name(p.accum.mode)) + " x=(" + std::to_string(p.N) + "," +
           std::to_string(p.C) + "," + std::to_string(p.H) + "," + std::to_string(p.W) +
           ") k=" + std::to_string(p.kernel) + " s=" + std::to_string(p.stride) +
           " pad=" + std::to_string(p.padding);
}

int64_t in_size(const Pool2dParams& p) { return p.N * p.C * p.H * p.W; }
int64_t out_size(const Pool2dParams& p) { return p.N * p.C * p.Ho * p.Wo; }

// Overlapping windows (ResNet stem 3x3 s2 p1, 3x3 s1, 2x2 s1, 4x4 s3 p2) and gapless or gapped
// ones without overlap (2x2 s2, 3x3 s3, 2x2 s3); one above the parallel threshold.
const Pool2dParams kOverlap[] = {make(2, 3, 9, 7, 3, 2, 1), make(2, 2, 6, 5, 3, 1, 1),
                                 make(3, 2, 10, 10, 2, 1, 0), make(1, 3, 11, 13, 4, 3, 2),
                                 make(8, 16, 28, 28, 3, 2, 1)};
const Pool2dParams kNoOverlap[] = {make(2, 3, 8, 8, 2, 2, 0), make(2, 3, 7, 9, 2, 2, 0),
                                   make(1, 2, 9, 9, 3, 3, 0), make(2, 2, 11, 10, 2, 3, 1),
                                   make(16, 16, 28, 28, 2, 2, 0)};

// The contributions to every dx cell, per plane, in the tree's window order.
struct Contribution {
    int64_t cell;    // index into dx
    int64_t window;  // o = oh * Wo + ow inside the plane
    float value;
};

std::vector<Contribution> contributions(const Pool2dParams& p, bool max,
                                        const std::vector<int32_t>& am, const Vec& dy) {
    std::vector<Contribution> cs;
    const float div = static_cast<float>(p.kernel * p.kernel);
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                const int64_t o = oh * p.Wo + ow, w = pl * p.Ho * p.Wo + o;
                if (max) {
                    cs.push_back({pl * p.H * p.W + am[w], o, dy[w]});
                    continue;
                }
                const float g = dy[w] / div;
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        const int64_t ih = oh * p.stride - p.padding + kh;
                        const int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                            cs.push_back({(pl * p.H + ih) * p.W + iw, o, g});
                    }
            }
    return cs;
}

// The recipe of each deterministic mode (atomic at 1 thread: the tree order).
Vec recipe(const Pool2dParams& p, const std::vector<Contribution>& cs) {
    const int64_t n = in_size(p);
    Vec dx(n, 0.0f);
    switch (p.accum.mode) {
        case AccumMode::kTree:
        case AccumMode::kAtomic:
            for (const Contribution& c : cs) dx[c.cell] = dx[c.cell] + c.value;
            return dx;
        case AccumMode::kKahan: {
            std::vector<common::KahanSum> k(n, common::kahan_zero());
            for (const Contribution& c : cs) common::kahan_add(k[c.cell], c.value);
            for (int64_t i = 0; i < n; ++i) dx[i] = common::kahan_value(k[i]);
            return dx;
        }
        case AccumMode::kExact: {  // this test's own accumulators, contributions in reverse
            std::vector<common::ExactAcc> e(n);
            for (auto& a : e) common::exact_init(a);
            for (auto it = cs.rbegin(); it != cs.rend(); ++it)
                common::exact_add(e[it->cell], it->value);
            for (int64_t i = 0; i < n; ++i) dx[i] = common::exact_value(e[i]);
            return dx;
        }
        case AccumMode::kPermuted: {  // windows in permuted order; stable inside a window
            const int64_t out = p.Ho * p.Wo;
            std::vector<uint32_t> order(out), rank(out);
            common::permute_order(order.data(), out, p.accum.permute_key);
            for (int64_t k = 0; k < out; ++k) rank[order[k]] = static_cast<uint32_t>(k);
            std::vector<Contribution> sorted = cs;
            std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
                return rank[a.window] < rank[b.window];  // planes are independent cells
            });
            for (const Contribution& c : sorted) dx[c.cell] = dx[c.cell] + c.value;
            return dx;
        }
    }
    return dx;
}

struct Grads {
    Vec dxm, dxa;  // max and avg backward
    std::vector<int32_t> am;
};

Grads run(const Pool2dParams& p, const Vec& x, const Vec& dy) {
    // dx starts at 9: every mode must write every cell (the atomic mode zeroes dx first).
    Grads r{Vec(in_size(p), 9.0f), Vec(in_size(p), 9.0f), std::vector<int32_t>(out_size(p))};
    Vec y(out_size(p));
    cpu::maxpool2d_forward(x.data(), y.data(), r.am.data(), p);
    cpu::maxpool2d_backward(dy.data(), r.am.data(), r.dxm.data(), p);
    cpu::avgpool2d_backward(dy.data(), r.dxa.data(), p);
    return r;
}

// Values on a coarse grid: many max-pool ties, so argmax cells collect several windows.
Vec tied_values(int64_t n, uint32_t tag) {
    Vec v = test::uniform_floats(n, -3.0f, 3.0f, test::test_seed(), tag);
    for (auto& x : v) x = std::floor(x * 2.0f) * 0.5f;
    return v;
}

TEST(Pool2dModes, EveryModeEqualsItsRecipe) {
    for (const auto* cases : {&kOverlap, &kNoOverlap}) {
        for (const Pool2dParams& base : *cases) {
            for (AccumSpec a : kModes) {
                const Pool2dParams p = with(base, a);
                SCOPED_TRACE(describe(p));
                const Vec x = tied_values(in_size(p), 1);
                const Vec dy = test::uniform_floats(out_size(p), -1.0f, 1.0f, test::test_seed(), 2);
                if (a.mode == AccumMode::kAtomic) omp_set_num_threads(1);
                const Grads r = run(p, x, dy);
                omp_set_num_threads(omp_get_num_procs());
                EXPECT_TRUE(
                    test::bitwise_equal(r.dxm, recipe(p, contributions(p, true, r.am, dy))));
                EXPECT_TRUE(
                    test::bitwise_equal(r.dxa, recipe(p, contributions(p, false, r.am, dy))));
            }
        }
    }
}

// Gradients spanning the float range, with subnormals, signed zeros, values near FLT_MAX (sums
// that overflow), infinities and NaNs: the exact mode's double fast path must hand such cells to
// its ExactAcc pass, and every mode must still equal its recipe bit for bit.
TEST(Pool2dModes, WideRangesAndSpecialsEqualTheRecipes) {
    const float wild[] = {1e30f, -1e30f, 1e-30f, -3e-41f,  3e38f,     3e38f, -0.0f,
                          1.0f,  -1.0f,  0.5f,   INFINITY, -INFINITY, NAN,   7e-45f};
    for (const Pool2dParams& base : kOverlap) {
        const Vec x = tied_values(in_size(base), 16);
        const Vec u = test::uniform_floats(out_size(base), 0.0f, 1.0f, test::test_seed(), 17);
        Vec dy(out_size(base));
        for (int64_t i = 0; i < out_size(base); ++i) {
            const int pick = static_cast<int>(u[i] * 40.0f);  // about 1 in 3 wild, else ordinary
            dy[i] = pick < 14 ? wild[pick] : u[i] - 0.5f;
        }
        for (AccumSpec a : kModes) {
            if (a.mode == AccumMode::kAtomic) continue;
            const Pool2dParams p = with(base, a);
            SCOPED_TRACE(describe(p));
            const Grads r = run(p, x, dy);
            EXPECT_TRUE(test::bitwise_equal(r.dxm, recipe(p, contributions(p, true, r.am, dy))));
            EXPECT_TRUE(test::bitwise_equal(r.dxa, recipe(p, contributions(p, false, r.am, dy))));
        }
    }
}

// A cell receives at most k*k contributions: (k*k + 1) * eps * sum|contributions| covers any
// order (and the one rounding of exact), plus the division of avg's g.
void expect_within_bound(const Pool2dParams& p, const Grads& r, const Vec& dy) {
    VecD dyd = test::to_double(dy), dyabs(dyd), dxm(in_size(p)), dxa(in_size(p));
    VecD magm(in_size(p)), maga(in_size(p));
    for (auto& v : dyabs) v = std::fabs(v);
    ref::maxpool2d_backward(dyd.data(), r.am.data(), dxm.data(), p);
    ref::maxpool2d_backward(dyabs.data(), r.am.data(), magm.data(), p);
    ref::avgpool2d_backward(dyd.data(), dxa.data(), p);
    ref::avgpool2d_backward(dyabs.data(), maga.data(), p);
    const double terms = static_cast<double>(p.kernel) * p.kernel;
    VecD bm(in_size(p)), ba(in_size(p));
    for (int64_t i = 0; i < in_size(p); ++i) {
        bm[i] = (terms + 1) * kEps32 * magm[i] + 1e-30;
        ba[i] = (terms + 2) * kEps32 * maga[i] + 1e-30;
    }
    EXPECT_TRUE(test::within_bound(r.dxm.data(), dxm.data(), bm.data(), in_size(p))) << "max";
    EXPECT_TRUE(test::within_bound(r.dxa.data(), dxa.data(), ba.data(), in_size(p))) << "avg";
}

TEST(Pool2dModes, WithinBoundOfDoubleReference) {
    for (const Pool2dParams& base : kOverlap) {
        for (AccumSpec a : kModes) {
            const Pool2dParams p = with(base, a);
            SCOPED_TRACE(describe(p));
            const Vec x = tied_values(in_size(p), 3);
            const Vec dy = test::uniform_floats(out_size(p), -1.0f, 1.0f, test::test_seed(), 4);
            expect_within_bound(p, run(p, x, dy), dy);
        }
    }
}

TEST(Pool2dModes, DeterministicModesIgnoreThreadCount) {
    for (const Pool2dParams& base : {make(8, 16, 28, 28, 3, 2, 1), make(4, 16, 30, 30, 3, 1, 1)}) {
        for (AccumSpec a : kModes) {
            if (a.mode == AccumMode::kAtomic) continue;
            const Pool2dParams p = with(base, a);
            SCOPED_TRACE(describe(p));
            const Vec x = tied_values(in_size(p), 5);
            const Vec dy = test::uniform_floats(out_size(p), -1.0f, 1.0f, test::test_seed(), 6);
            omp_set_num_threads(1);
            const Grads first = run(p, x, dy);
            for (int t : {2, 3, 4, 7}) {
                omp_set_num_threads(t);
                const Grads r = run(p, x, dy);
                EXPECT_TRUE(test::bitwise_equal(r.dxm, first.dxm)) << "threads=" << t;
                EXPECT_TRUE(test::bitwise_equal(r.dxa, first.dxa)) << "threads=" << t;
            }
            omp_set_num_threads(omp_get_num_procs());
        }
    }
}

// stride >= kernel: no cell is shared, so every mode (atomic too, at any thread count) gives the
// tree's bits, also for -0, +-inf and subnormal gradients.
TEST(Pool2dModes, NoOverlapEveryModeGivesTheSameBits) {
    for (const Pool2dParams& base : kNoOverlap) {
        const Pool2dParams tp = with(base, {AccumMode::kTree, 0});
        const Vec x = tied_values(in_size(tp), 7);
        Vec dy = test::uniform_floats(out_size(tp), -1.0f, 1.0f, test::test_seed(), 8);
        for (int64_t i = 0; i < out_size(tp); i += 7) dy[i] = -0.0f;
        for (int64_t i = 3; i < out_size(tp); i += 11) dy[i] = (i % 2) ? -INFINITY : INFINITY;
        for (int64_t i = 5; i < out_size(tp); i += 13) dy[i] = 3e-41f;
        const Grads want = run(tp, x, dy);
        for (AccumSpec a : kModes) {
            for (int t : {1, 2, 4}) {
                omp_set_num_threads(t);
                const Pool2dParams p = with(base, a);
                SCOPED_TRACE(describe(p) + " threads=" + std::to_string(t));
                const Grads r = run(p, x, dy);
                EXPECT_TRUE(test::bitwise_equal(r.dxm, want.dxm));
                EXPECT_TRUE(test::bitwise_equal(r.dxa, want.dxa));
            }
        }
        omp_set_num_threads(omp_get_num_procs());
    }
}

// Overlapping 3x3 stride-2 max pool whose maxima sit at the window centres (2oh+1, 2ow+1): each
// centre belongs to one window only, so every cell gets at most one contribution and every
// mode's own path (not the no-overlap shortcut) must give the tree's bits.
TEST(Pool2dModes, SingleContributionPerCellSameBitsInEveryMode) {
    const Pool2dParams base = make(4, 16, 29, 29, 3, 2, 0);
    Vec x = test::uniform_floats(in_size(base), -1.0f, 1.0f, test::test_seed(), 9);
    for (int64_t pl = 0; pl < base.N * base.C; ++pl)
        for (int64_t oh = 0; oh < base.Ho; ++oh)
            for (int64_t ow = 0; ow < base.Wo; ++ow)
                x[(pl * base.H + 2 * oh + 1) * base.W + 2 * ow + 1] = 100.0f;
    Vec dy = test::uniform_floats(out_size(base), -1.0f, 1.0f, test::test_seed(), 10);
    for (int64_t i = 0; i < out_size(base); i += 9) dy[i] = -0.0f;
    const Grads want = run(with(base, {AccumMode::kTree, 0}), x, dy);
    for (AccumSpec a : kModes) {
        for (int t : {1, 2, 4}) {
            omp_set_num_threads(t);
            SCOPED_TRACE(describe(with(base, a)) + " threads=" + std::to_string(t));
            EXPECT_TRUE(test::bitwise_equal(run(with(base, a), x, dy).dxm, want.dxm));
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

// Avg 3x3 stride 1: every inner cell sums 9 contributions; dy = +-(1000 + u) cancels heavily.
// Errors against a long-double sum of the same float contributions.
TEST(Pool2dModes, KahanAtLeastAsAccurateAsTree) {
    const Pool2dParams base = make(2, 4, 24, 24, 3, 1, 1);
    const Vec u = test::uniform_floats(out_size(base), -1.0f, 1.0f, test::test_seed(), 11);
    Vec dy(out_size(base));
    for (int64_t i = 0; i < out_size(base); ++i)
        dy[i] = ((i % 2) ? -1.0f : 1.0f) * (1000.0f + u[i]);
    const Vec x(in_size(base), 0.0f);
    const Grads tree = run(with(base, {AccumMode::kTree, 0}), x, dy);
    const Grads kahan = run(with(base, {AccumMode::kKahan, 0}), x, dy);
    std::vector<long double> want(in_size(base), 0.0L);
    for (const Contribution& c : contributions(base, false, tree.am, dy)) want[c.cell] += c.value;
    long double et = 0, ek = 0, mt = 0, mk = 0;
    for (int64_t i = 0; i < in_size(base); ++i) {
        const long double a = std::fabs(tree.dxa[i] - want[i]),
                          b = std::fabs(kahan.dxa[i] - want[i]);
        et += a, ek += b, mt = std::max(mt, a), mk = std::max(mk, b);
    }
    std::printf(
        "[ info ] avg-pool backward total |error|: tree %.3Lg, kahan %.3Lg; largest: "
        "tree %.3Lg, kahan %.3Lg\n",
        et, ek, mt, mk);
    EXPECT_LE(ek, et);
    EXPECT_LE(mk, mt);
    EXPECT_LT(ek, et);
}

TEST(Pool2dModes, PermutedReplaysPerKeyAndDiffersAcrossKeys) {
    const Pool2dParams base = make(2, 4, 16, 16, 3, 1, 1);
    const Vec x = tied_values(in_size(base), 12);
    const Vec dy = test::uniform_floats(out_size(base), -1.0f, 1.0f, test::test_seed(), 13);
    const Grads a = run(with(base, {AccumMode::kPermuted, 21}), x, dy);
    const Grads again = run(with(base, {AccumMode::kPermuted, 21}), x, dy);
    EXPECT_TRUE(test::bitwise_equal(a.dxm, again.dxm));
    EXPECT_TRUE(test::bitwise_equal(a.dxa, again.dxa));
    for (uint64_t key : {22u, 23u, 24u}) {
        const Grads b = run(with(base, {AccumMode::kPermuted, key}), x, dy);
        // Hundreds of cells summing up to 9 contributions in a new order: bits must move.
        EXPECT_FALSE(test::bitwise_equal(a.dxa, b.dxa)) << "key " << key;
        EXPECT_FALSE(test::bitwise_equal(a.dxm, b.dxm)) << "key " << key;
    }
}

/// The tree recipe's dx with every cell that receives more than two contributions set to +0
/// (in `got` too): a cell with at most two has the same bits in every order (+0; +0 + c;
/// +0 + a + b == +0 + b + a), so an atomic result must match it there.
std::pair<Vec, Vec> at_most_two(const Pool2dParams& p, const std::vector<Contribution>& cs,
                                Vec got) {
    Vec want = recipe(with(p, {AccumMode::kTree, 0}), cs);
    std::vector<int> count(in_size(p), 0);
    for (const Contribution& c : cs) ++count[c.cell];
    for (int64_t i = 0; i < in_size(p); ++i)
        if (count[i] > 2) got[i] = want[i] = 0.0f;
    return {got, want};
}

TEST(Pool2dModes, AtomicStaysWithinItsBoundUnderContention) {
    // Overlapping 3x3 windows at strides 2 and 1 (avg: up to 4 and 9 contributions per cell; max
    // with ties: any number), and 2x2 stride 2 (no overlap: every cell, the tree's bits).
    for (const Pool2dParams& base : {make(16, 16, 32, 32, 3, 2, 1), make(16, 16, 32, 32, 3, 1, 1),
                                     make(16, 16, 32, 32, 2, 2, 0)}) {
        const Pool2dParams p = with(base, {AccumMode::kAtomic, 0});
        SCOPED_TRACE(describe(p));
        const Vec x = tied_values(in_size(p), 14);
        const Vec dy = test::uniform_floats(out_size(p), -1.0f, 1.0f, test::test_seed(), 15);
        const std::vector<int32_t> am = run(with(base, {AccumMode::kTree, 0}), x, dy).am;
        const auto max_cs = contributions(p, true, am, dy),
                   avg_cs = contributions(p, false, am, dy);
        for (int t : {2, 4}) {
            SCOPED_TRACE("threads=" + std::to_string(t));
            omp_set_num_threads(t);
            std::set<std::vector<uint32_t>> seen;
            for (int call = 0; call < 5; ++call) {
                const Grads r = run(p, x, dy);
                expect_within_bound(p, r, dy);
                const auto [gm, wm] = at_most_two(p, max_cs, r.dxm);
                const auto [ga, wa] = at_most_two(p, avg_cs, r.dxa);
                EXPECT_TRUE(test::bitwise_equal(gm, wm)) << "max";
                EXPECT_TRUE(test::bitwise_equal(ga, wa)) << "avg";
                std::vector<uint32_t> key;
                for (const Vec* v : {&r.dxm, &r.dxa})
                    for (float f : *v) key.push_back(test::bits(f));
                seen.insert(key);
            }
            std::printf("[ info ] pool %s, %d threads: %zu distinct results in 5 calls\n",
                        describe(p).c_str(), t, seen.size());
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
