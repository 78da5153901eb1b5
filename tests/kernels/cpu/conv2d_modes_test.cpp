// SPDX-License-Identifier: MIT
// Pins the accumulation modes of conv.wgrad and conv.dgrad (kernels/conv2d.h): kahan, exact and
// permuted equal their recipe evaluated here from the test's own leaves / per-tap values, bit for
// bit on every GEMM ISA path; every mode lies within its derived bound of the double reference
// (c * eps32 * the same sum over |terms|, c below); tree, kahan, exact, permuted ignore the thread
// count (1, 2, 3, 4, 7); exact ignores the order of the samples (dw identical, dx permuted); kahan
// beats tree on ill-conditioned sums; permuted replays its key and varies with it; atomic under
// contention (5 calls at 2 and 4 threads) stays within its bound on every call, and with two
// partials per element (N <= 2G samples, Kh = 2 kernel rows) every call has the recipe's bits
// (two partials commute); the number of distinct results is printed.
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
#include "kernels/conv2d.h"
#include "kernels/gemm.h"
#include "kernels/ref/conv2d_ref.h"
#include "tests/support/compare.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using enum common::AccumMode;
using test::absd, test::eps_scaled;
using test::geom, test::xsize, test::wsize, test::ysize, test::describe;
using test::kAllModes, test::kDeterministicModes, test::accum_mode_name;

constexpr uint64_t kKey = 0x1234abcdull;

// Odd sizes, strides 1-3, padding (also as wide as the image), kernels 1 (pointwise and
// strided), 3, 5, 7, more samples than one wgrad wave (16), more positions than one K block,
// more live rows and output channels than one exact wgrad tile holds.
const Conv2dParams kCases[] = {
    geom(3, 2, 7, 5, 3, 3, 3, 1, 1),   geom(2, 3, 9, 9, 4, 3, 3, 2, 1),
    geom(2, 1, 8, 8, 5, 1, 1, 1, 0),   geom(2, 2, 9, 9, 3, 1, 1, 3, 1),
    geom(2, 2, 11, 9, 3, 7, 7, 1, 3),  geom(17, 3, 5, 5, 2, 3, 3, 1, 1),
    geom(4, 3, 10, 10, 2, 5, 5, 3, 0), geom(2, 2, 20, 19, 3, 3, 3, 1, 1),
    geom(2, 3, 2, 2, 4, 5, 5, 1, 2),   geom(2, 2, 6, 8, 3, 2, 3, 1, 0),
    geom(5, 16, 4, 4, 10, 3, 3, 1, 1),  // exact, small maps: full + partial tiles
    geom(3, 16, 4, 4, 70, 3, 3, 1, 1),  // exact: 64-channel tiles, 8-channel groups + rest
    geom(33, 12, 8, 8, 9, 3, 3, 1, 1),  // exact: N x P = 2112, 96-row spans (colt budget)
    geom(3, 3, 7, 6, 32, 3, 3, 1, 1),   // few live rows, Co = 32: direct wgrad leaves
};

struct Data {
    std::vector<float> x, w, dy;
};

Data make_data(const Conv2dParams& p, uint64_t seed) {
    return Data{test::uniform_floats(xsize(p), -1, 1, seed, 1),
                test::uniform_floats(wsize(p), -1, 1, seed, 2),
                test::uniform_floats(ysize(p), -1, 1, seed, 4)};
}

struct Grads {
    std::vector<float> dx, dw;
};

Grads run(const Data& d, Conv2dParams p, AccumMode mode, uint64_t key = kKey) {
    p.accum = common::accum_spec(mode, key);
    Grads g{std::vector<float>(xsize(p), 9.0f), std::vector<float>(wsize(p), 9.0f)};
    cpu::conv2d_backward_data(d.dy.data(), d.w.data(), g.dx.data(), p);
    cpu::conv2d_backward_weight(d.x.data(), d.dy.data(), g.dw.data(), p);
    return g;
}

/// leaves[k * L + e], e = (o, c, ki, kj): the fma chain from +0 over positions ascending of
/// dy * xpad, continued over the `group` samples of leaf k in order (1: one leaf per sample).
std::vector<float> own_wgrad_leaves(const std::vector<float>& x, const std::vector<float>& dy,
                                    const Conv2dParams& p, int64_t group = 1) {
    const int64_t L = wsize(p);
    std::vector<float> leaves((p.n + group - 1) / group * L, 0.0f);
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t c = 0; c < p.ci; ++c)
                for (int64_t ki = 0; ki < p.kh; ++ki)
                    for (int64_t kj = 0; kj < p.kw; ++kj) {
                        float& acc =
                            leaves[s / group * L + ((o * p.ci + c) * p.kh + ki) * p.kw + kj];
                        for (int64_t oh = 0; oh < p.ho; ++oh)
                            for (int64_t ow = 0; ow < p.wo; ++ow) {
                                const int64_t ih = oh * p.stride - p.pad + ki;
                                const int64_t iw = ow * p.stride - p.pad + kj;
                                const bool in = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
                                acc = std::fma(dy[((s * p.co + o) * p.ho + oh) * p.wo + ow],
                                               in ? x[((s * p.ci + c) * p.h + ih) * p.w + iw]
                                                  : 0.0f,
                                               acc);
                            }
                    }
    return leaves;
}

/// For every input element, its per-tap values t in tap order (ki, kj) ascending, with the tap
/// index ki * Kw + kj: t = +0 + sum over o ascending of w[o,c,ki,kj] * dy[s,o,oh,ow].
using Taps = std::vector<std::vector<std::pair<int64_t, float>>>;  // (xsize)

Taps own_dgrad_taps(const std::vector<float>& dy, const std::vector<float>& w,
                    const Conv2dParams& p) {
    Taps t(xsize(p));
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t c = 0; c < p.ci; ++c)
            for (int64_t ih = 0; ih < p.h; ++ih)
                for (int64_t iw = 0; iw < p.w; ++iw) {
                    auto& list = t[((s * p.ci + c) * p.h + ih) * p.w + iw];
                    for (int64_t ki = 0; ki < p.kh; ++ki)
                        for (int64_t kj = 0; kj < p.kw; ++kj)
                            if (float v; test::dgrad_tap(dy, w, p, s, c, ih, iw, ki, kj, &v))
                                list.emplace_back(ki * p.kw + kj, v);
                }
    return t;
}

/// The mode's recipe over terms t, given in the order the recipe visits them: kahan (the tree of
/// (t, +0) pairs when `tree`, else kahan_add in order), exact, or permuted (sequential from +0).
float own_sum(const std::vector<float>& t, AccumMode mode, bool tree) {
    if (mode == AccumMode::kExact) {
        common::ExactAcc a;
        common::exact_init(a);
        for (float v : t) common::exact_add(a, v);
        return common::exact_value(a);
    }
    if (mode == AccumMode::kKahan && tree) {
        std::vector<common::KahanSum> k;
        for (float v : t) k.push_back(common::KahanSum{v, 0.0f});
        return common::kahan_value(common::kahan_tree_combine(k.data(), std::ssize(k)));
    }
    if (mode == AccumMode::kKahan)
        return common::kahan_value(common::kahan_sum(t.data(), std::ssize(t)));
    float acc = 0.0f;
    for (float v : t) acc = acc + v;
    return acc;
}

/// wgrad: the leaves of each element in sample order (permuted: in permute_order(N, key)).
std::vector<float> own_wgrad(const std::vector<float>& leaves, const Conv2dParams& p,
                             AccumMode mode, uint64_t key) {
    const int64_t L = wsize(p);
    std::vector<float> dw(L), t(p.n);
    std::vector<uint32_t> order(p.n);
    common::permute_order(order.data(), p.n, key);
    for (int64_t e = 0; e < L; ++e) {
        for (int64_t k = 0; k < p.n; ++k)
            t[k] = leaves[(mode == AccumMode::kPermuted ? order[k] : k) * L + e];
        dw[e] = own_sum(t, mode, true);
    }
    return dw;
}

/// dgrad: the taps of each element ascending (permuted: in permute_order(Kh*Kw, key)).
std::vector<float> own_dgrad(const Taps& taps, const Conv2dParams& p, AccumMode mode,
                             uint64_t key) {
    std::vector<float> dx(xsize(p));
    const int64_t kk = p.kh * p.kw;
    std::vector<uint32_t> pi(kk);
    common::permute_order(pi.data(), kk, key);
    for (int64_t e = 0; e < xsize(p); ++e) {
        std::vector<float> t;
        for (int64_t j = 0; j < kk; ++j)
            for (const auto& [tap, v] : taps[e])
                if (tap == (mode == AccumMode::kPermuted ? static_cast<int64_t>(pi[j]) : j))
                    t.push_back(v);
        dx[e] = own_sum(t, mode, false);
    }
    return dx;
}

/// The atomic recipe with the partials added in ascending order from +0 (with at most two
/// partials per element, the bits of every order): wgrad partials are leaves continued over
/// kConv2dAtomicGroup samples; dgrad partials +0 + a kernel row's taps, kj ascending.
Grads own_atomic(const Data& d, const Conv2dParams& p) {
    const int64_t L = wsize(p);
    const auto parts = own_wgrad_leaves(d.x, d.dy, p, kConv2dAtomicGroup);
    Grads g{std::vector<float>(xsize(p), 0.0f), std::vector<float>(L, 0.0f)};
    for (std::size_t k = 0; k < parts.size(); ++k) g.dw[k % L] = g.dw[k % L] + parts[k];
    const Taps taps = own_dgrad_taps(d.dy, d.w, p);
    for (int64_t e = 0; e < xsize(p); ++e)
        for (int64_t ki = 0; ki < p.kh; ++ki) {
            float row = 0.0f;
            for (const auto& [tap, v] : taps[e])
                if (tap / p.kw == ki) row = row + v;
            g.dx[e] = g.dx[e] + row;
        }
    return g;
}

// ---- the derived bound (EveryModeWithinItsDerivedBound, AtomicStaysWithinItsBound...) ----

/// The double reference of both grads, and the same sums over |terms| (the bound's magnitudes).
struct Reference {
    std::vector<double> dx, dxm, dw, dwm;
};

Reference reference(const Data& d, const Conv2dParams& p) {
    const auto x = test::to_double(d.x), w = test::to_double(d.w), dy = test::to_double(d.dy);
    const auto ax = absd(d.x), aw = absd(d.w), ady = absd(d.dy);
    Reference r{std::vector<double>(xsize(p)), std::vector<double>(xsize(p)),
                std::vector<double>(wsize(p)), std::vector<double>(wsize(p))};
    ref::conv2d_backward_data(dy.data(), w.data(), r.dx.data(), p);
    ref::conv2d_backward_data(ady.data(), aw.data(), r.dxm.data(), p);
    ref::conv2d_backward_weight(x.data(), dy.data(), r.dw.data(), p);
    ref::conv2d_backward_weight(ax.data(), ady.data(), r.dwm.data(), p);
    return r;
}

/// Both grads within mode m's bound c * eps32 * sum|terms|: c = terms per leaf (wgrad P, dgrad
/// Co) + (1 | N or Kh*Kw) + 2 for kahan, exact | permuted; wgrad tree and atomic: G * P +
/// (tree depth | number) of the N / G group partials + 2 (G = min(N, conv2d_tree_group(P) |
/// kConv2dAtomicGroup)); dgrad atomic Co + Kw + Kh (a tap's fma chain over Co, then Kw - 1 adds
/// inside its kernel row and Kh - 1 adds of the row partials in any order, + 2); dgrad tree on
/// conv2d_dgrad_is_forward shapes: one chain of Co*Kh*Kw.
void expect_within_bound(const Grads& g, const Reference& r, const Conv2dParams& p, AccumMode m) {
    const double P = p.ho * p.wo, N = p.n, KK = p.kh * p.kw;
    const bool tight = m == AccumMode::kKahan || m == AccumMode::kExact;
    const double Gt = std::min<double>(N, conv2d_tree_group(p.ho * p.wo));
    const double Ga = std::min<double>(N, kConv2dAtomicGroup);
    const double cw = m == AccumMode::kAtomic ? Ga * P + std::ceil(N / Ga) + 2
                      : m == AccumMode::kTree ? Gt * P + std::ceil(std::log2(std::ceil(N / Gt))) + 2
                                              : P + (tight ? 1 : N) + 2;
    const double cd = m == AccumMode::kAtomic ? p.co + p.kw + p.kh
                      : m == AccumMode::kTree && conv2d_dgrad_is_forward(p)
                          ? p.co * KK + 1
                          : p.co + (tight ? 1 : KK) + 2;
    const auto bw = eps_scaled(r.dwm, cw), bd = eps_scaled(r.dxm, cd);
    EXPECT_TRUE(test::within_bound(g.dw.data(), r.dw.data(), bw.data(), wsize(p))) << "wgrad";
    EXPECT_TRUE(test::within_bound(g.dx.data(), r.dx.data(), bd.data(), xsize(p))) << "dgrad";
}

TEST(Conv2dModes, KahanExactPermutedMatchTheirRecipeBitwiseOnEveryIsa) {
    const CpuIsa saved = cpu::cpu_isa();
    for (const Conv2dParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 10);
        const auto leaves = own_wgrad_leaves(d.x, d.dy, p);
        const Taps taps = own_dgrad_taps(d.dy, d.w, p);
        for (AccumMode m : {AccumMode::kKahan, AccumMode::kExact, AccumMode::kPermuted}) {
            SCOPED_TRACE(accum_mode_name(m));
            const auto dw = own_wgrad(leaves, p, m, kKey), dx = own_dgrad(taps, p, m, kKey);
            for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
                if (!cpu::cpu_isa_set(isa)) continue;
                SCOPED_TRACE(cpu::cpu_isa_name(isa));
                const Grads g = run(d, p, m);
                ASSERT_TRUE(test::bitwise_equal(g.dw, dw)) << "wgrad";
                ASSERT_TRUE(test::bitwise_equal(g.dx, dx)) << "dgrad";
            }
        }
    }
    cpu::cpu_isa_set(saved);
}

TEST(Conv2dModes, EveryModeWithinItsDerivedBound) {
    for (const Conv2dParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 11);
        const Reference r = reference(d, p);
        for (AccumMode m : kAllModes) {
            SCOPED_TRACE(accum_mode_name(m));
            expect_within_bound(run(d, p, m), r, p, m);
        }
    }
}

TEST(Conv2dModes, ThreadCountChangesNoBitInDeterministicModes) {
    // 37 samples: 3 wgrad waves; 1 sample (parallel GEMM); 9000 weights (slices across threads).
    for (const Conv2dParams& p : {geom(37, 4, 10, 9, 8, 3, 3, 1, 1),
                                  geom(1, 16, 14, 14, 32, 3, 3, 1, 1),
                                  geom(19, 2, 9, 9, 500, 3, 3, 2, 1)}) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 12);
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

TEST(Conv2dModes, ExactIsInvariantToTheOrderOfSamples) {
    for (const Conv2dParams& p :
         {geom(37, 3, 9, 8, 5, 3, 3, 1, 1), geom(6, 2, 7, 7, 4, 5, 5, 2, 2)}) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 13);
        std::vector<int64_t> perm(p.n);  // reversal composed with a rotation
        for (int64_t j = 0; j < p.n; ++j) perm[j] = (p.n - 1 - j + 5) % p.n;
        Data e = d;
        const int64_t xs = p.ci * p.h * p.w, ys = p.co * p.ho * p.wo;
        for (int64_t j = 0; j < p.n; ++j) {
            std::copy_n(d.x.begin() + perm[j] * xs, xs, e.x.begin() + j * xs);
            std::copy_n(d.dy.begin() + perm[j] * ys, ys, e.dy.begin() + j * ys);
        }
        const Grads a = run(d, p, AccumMode::kExact), b = run(e, p, AccumMode::kExact);
        ASSERT_TRUE(test::bitwise_equal(a.dw, b.dw));
        std::vector<float> dx_perm(xsize(p));
        for (int64_t j = 0; j < p.n; ++j)
            std::copy_n(a.dx.begin() + perm[j] * xs, xs, dx_perm.begin() + j * xs);
        ASSERT_TRUE(test::bitwise_equal(b.dx, dx_perm));
        // = the exact sum of leaves computed here; tree is not invariant (so the test can fail).
        ASSERT_TRUE(test::bitwise_equal(
            a.dw, own_wgrad(own_wgrad_leaves(d.x, d.dy, p), p, AccumMode::kExact, 0)));
        EXPECT_FALSE(test::bitwise_equal(run(d, p, AccumMode::kTree).dw,
                                         run(e, p, AccumMode::kTree).dw));
    }
}

/// v[i] *= 2^(i * mul % span - span / 2) * (-1)^i: magnitudes over 2^(+-span/2), alternating signs.
void spread(std::vector<float>& v, int mul, int span) {
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = std::ldexp(v[i], static_cast<int>(i * mul % span) - span / 2) * (i % 2 ? -1 : 1);
}

/// Total |error| of a kahan and a tree result against `want`.
struct Errors {
    double kahan = 0, tree = 0;
};

/// kahan within Neumaier's eps |S| + 2 n eps^2 sum|terms| (terms exact) at every element; adds
/// both total errors to `err`. Kahan beats tree on the sum of several draws, not on every one:
/// a lucky draw can leave tree exact.
void check_kahan_bound(const std::vector<float>& kahan, const std::vector<float>& tree,
                       const std::vector<double>& want, const std::vector<double>& mag, double n,
                       Errors& err) {
    std::vector<double> bound(want.size());
    for (std::size_t e = 0; e < want.size(); ++e) {
        bound[e] = test::kEps32 * std::fabs(want[e]) + 2 * n * test::kEps32 * test::kEps32 * mag[e];
        err.kahan += std::fabs(kahan[e] - want[e]);
        err.tree += std::fabs(tree[e] - want[e]);
    }
    EXPECT_TRUE(test::within_bound(kahan.data(), want.data(), bound.data(), want.size()));
}

void expect_kahan_beats_tree(const Errors& err) {
    EXPECT_LT(err.kahan, err.tree);
    std::cout << "[ info     ] total |error|: tree " << err.tree << ", kahan " << err.kahan << "\n";
}

constexpr int kDraws = 6;  // data draws per case

TEST(Conv2dModes, KahanBeatsTreeOnIllConditionedSums) {
    {  // wgrad: 1x1 images and kernel, x = 1: the leaves are dy[s,o] exactly, over 2^+-20; the
       // last 32 samples negate the first 32 in another order (exact sum 0).
        const Conv2dParams p = geom(64, 3, 1, 1, 4, 1, 1, 1, 0);
        Errors err;
        for (uint64_t draw = 0; draw < kDraws; ++draw) {
            Data d{std::vector<float>(xsize(p), 1.0f), test::uniform_floats(wsize(p), -1, 1, 7, 2),
                   test::uniform_floats(ysize(p), 1, 2, test::test_seed() + 14 + 100 * draw, 4)};
            spread(d.dy, 7, 41);
            for (int64_t k = 0; k < 32 * p.co; ++k)
                d.dy[32 * p.co + k] = -d.dy[(k / p.co + 5) % 32 * p.co + k % p.co];
            std::vector<double> want(wsize(p)), mag(wsize(p));
            const auto x = test::to_double(d.x), dy = test::to_double(d.dy), ady = absd(d.dy);
            ref::conv2d_backward_weight(x.data(), dy.data(), want.data(), p);
            ref::conv2d_backward_weight(x.data(), ady.data(), mag.data(), p);
            check_kahan_bound(run(d, p, AccumMode::kKahan).dw, run(d, p, AccumMode::kTree).dw,
                              want, mag, p.n, err);
        }
        expect_kahan_beats_tree(err);
    }
    {  // dgrad: one output channel, dy = 1: the 25 per-tap values are the weights, over 2^+-12.
        const Conv2dParams p = geom(2, 3, 9, 9, 1, 5, 5, 1, 2);
        Errors err;
        for (uint64_t draw = 0; draw < kDraws; ++draw) {
            Data d{test::uniform_floats(xsize(p), -1, 1, 7, 1),
                   test::uniform_floats(wsize(p), 1, 2, test::test_seed() + 15 + 100 * draw, 2),
                   std::vector<float>(ysize(p), 1.0f)};
            spread(d.w, 5, 25);
            std::vector<double> want(xsize(p)), mag(xsize(p));
            const auto w = test::to_double(d.w), dy = test::to_double(d.dy), aw = absd(d.w);
            ref::conv2d_backward_data(dy.data(), w.data(), want.data(), p);
            ref::conv2d_backward_data(dy.data(), aw.data(), mag.data(), p);
            check_kahan_bound(run(d, p, AccumMode::kKahan).dx, run(d, p, AccumMode::kTree).dx,
                              want, mag, 25, err);
        }
        expect_kahan_beats_tree(err);
    }
}

TEST(Conv2dModes, PermutedReplaysItsKeyAndVariesWithIt) {
    const Conv2dParams p = geom(23, 3, 8, 8, 4, 3, 3, 1, 1);
    const Data d = make_data(p, test::test_seed() + 16);
    const Grads a = run(d, p, AccumMode::kPermuted, 7), b = run(d, p, AccumMode::kPermuted, 7);
    const Grads c = run(d, p, AccumMode::kPermuted, 8);
    EXPECT_TRUE(test::bitwise_equal(a.dw, b.dw) && test::bitwise_equal(a.dx, b.dx));
    EXPECT_FALSE(test::bitwise_equal(a.dw, c.dw) || test::bitwise_equal(a.dx, c.dx));
}

TEST(Conv2dModes, AtomicStaysWithinItsBoundUnderContention) {
    // SmallCNN's conv2 at batch 128: 8 wgrad partials (groups of 16 samples) and 3 dgrad row
    // partials per element race. N = 32 with a 2x3 kernel: two of each, which commute (+0 + a +
    // b == +0 + b + a), so every call has the recipe's bits (its 2 wgrad groups race at 2
    // threads; at 4 they run one after the other). The distinct results are printed.
    for (const Conv2dParams& p :
         {geom(128, 16, 14, 14, 32, 3, 3, 1, 1), geom(32, 8, 14, 14, 16, 2, 3, 1, 1)}) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 17);
        const Reference r = reference(d, p);
        const bool two = p.n <= 2 * kConv2dAtomicGroup && p.kh <= 2;
        const Grads want = two ? own_atomic(d, p) : Grads{};
        test::atomic_calls_under_contention(
            "conv " + describe(p), [&] { return run(d, p, AccumMode::kAtomic); },
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
