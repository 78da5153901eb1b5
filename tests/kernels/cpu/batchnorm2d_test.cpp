// SPDX-License-Identifier: MIT
// Pins the batchnorm2d recipe of kernels/batchnorm2d.h: the CPU kernels equal a plain float
// evaluation of the recipe (sequential per-sample leaves, tree over samples, the stated
// elementwise orders) bit for bit; they are within derived bounds of the double reference
// (sums of L terms: L * eps32 * sum|terms|, propagated through invstd, xhat and dx); and no
// thread count changes a bit.
#include "kernels/batchnorm2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/ref/batchnorm2d_ref.h"
#include "tests/support/batchnorm_bounds.h"
#include "tests/support/compare.h"
#include "tests/support/isa_paths.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using test::kEps32;
using Vec = std::vector<float>;
using VecD = std::vector<double>;

// (N, C, HW): one sample, odd sizes, 8-row block tails, a SmallCNN-sized map above the
// parallel threshold.
// Rows N * C in groups of 16 and not (the AVX-512 row sums take 16 rows at a time), positions
// HW in blocks of 16 and not, and one position per row (MediumCNN's 1x1 map).
const BatchNorm2dParams kCases[] = {
    {.N = 2, .C = 1, .HW = 1},  {.N = 1, .C = 3, .HW = 5},   {.N = 3, .C = 5, .HW = 7},
    {.N = 9, .C = 2, .HW = 9},  {.N = 13, .C = 3, .HW = 25}, {.N = 16, .C = 16, .HW = 196},
    {.N = 5, .C = 7, .HW = 16}, {.N = 20, .C = 20, .HW = 1}, {.N = 4, .C = 8, .HW = 2}};

std::string describe(const BatchNorm2dParams& p) {
    return "N=" + std::to_string(p.N) + " C=" + std::to_string(p.C) + " HW=" + std::to_string(p.HW);
}

int64_t numel(const BatchNorm2dParams& p) { return p.N * p.C * p.HW; }

// Inputs with a non-zero mean per channel so the two-pass variance matters.
Vec make_x(const BatchNorm2dParams& p, uint32_t tag) {
    Vec x = test::uniform_floats(numel(p), -2.0f, 2.0f, test::test_seed(), tag);
    for (int64_t i = 0; i < numel(p); ++i)
        x[i] = x[i] + 0.5f * static_cast<float>((i / p.HW) % p.C);
    return x;
}

// ---- the recipe, written plainly in float ----
template <typename Term>
float spec_total(const BatchNorm2dParams& p, int64_t c, Term term) {
    Vec leaves(static_cast<std::size_t>(p.N));
    for (int64_t n = 0; n < p.N; ++n) {
        float acc = 0.0f;
        for (int64_t i = 0; i < p.HW; ++i) acc = acc + term((n * p.C + c) * p.HW + i, c);
        leaves[n] = acc;
    }
    return common::reduce_tree_combine(leaves.data(), p.N);
}

struct Outs {
    Vec mean, var, invstd, y, dx, dgamma, dbeta;
    /// Every output, in the order above (the outputs a failed check numbers).
    std::vector<Vec> all() const { return {mean, var, invstd, y, dx, dgamma, dbeta}; }
};

Outs spec(const BatchNorm2dParams& p, const Vec& x, const Vec& g, const Vec& b, const Vec& dy) {
    Outs s;
    const float count = static_cast<float>(p.N * p.HW);
    for (int64_t c = 0; c < p.C; ++c) {
        float m = spec_total(p, c, [&](int64_t k, int64_t) { return x[k]; }) / count;
        float v = spec_total(p, c, [&](int64_t k, int64_t) { return (x[k] - m) * (x[k] - m); });
        s.mean.push_back(m);
        s.var.push_back(v / count);
        s.invstd.push_back(1.0f / std::sqrt(s.var.back() + p.eps));
    }
    auto xhat = [&](int64_t k, int64_t c) { return (x[k] - s.mean[c]) * s.invstd[c]; };
    for (int64_t c = 0; c < p.C; ++c) {
        s.dbeta.push_back(spec_total(p, c, [&](int64_t k, int64_t) { return dy[k]; }));
        s.dgamma.push_back(
            spec_total(p, c, [&](int64_t k, int64_t c2) { return dy[k] * xhat(k, c2); }));
    }
    for (int64_t k = 0; k < numel(p); ++k) {
        const int64_t c = (k / p.HW) % p.C;
        s.y.push_back(xhat(k, c) * g[c] + b[c]);
        const float kk = (g[c] * s.invstd[c]) / count;
        s.dx.push_back(kk * (((count * dy[k]) - s.dbeta[c]) - xhat(k, c) * s.dgamma[c]));
    }
    return s;
}

Outs run_cpu(const BatchNorm2dParams& p, const Vec& x, const Vec& g, const Vec& b, const Vec& dy,
             bool training = true) {
    Outs r{Vec(p.C), Vec(p.C), Vec(p.C), Vec(numel(p)), Vec(numel(p)), Vec(p.C), Vec(p.C)};
    cpu::batchnorm2d_stats(x.data(), r.mean.data(), r.var.data(), r.invstd.data(), p);
    cpu::batchnorm2d_apply(x.data(), r.mean.data(), r.invstd.data(), g.data(), b.data(), r.y.data(),
                           p);
    cpu::batchnorm2d_backward(dy.data(), x.data(), r.mean.data(), r.invstd.data(), g.data(),
                              r.dx.data(), r.dgamma.data(), r.dbeta.data(), training, p);
    return r;
}

struct Inputs {
    Vec x, g, b, dy;
};

Inputs make_inputs(const BatchNorm2dParams& p) {
    return {make_x(p, 1), test::uniform_floats(p.C, 0.5f, 1.5f, test::test_seed(), 2),
            test::uniform_floats(p.C, -1.0f, 1.0f, test::test_seed(), 3),
            test::uniform_floats(numel(p), -1.0f, 1.0f, test::test_seed(), 4)};
}

TEST(BatchNorm2d, CpuEqualsTheRecipeBitwiseOnEveryIsa) {
    test::for_each_cpu_isa([] {
        for (const BatchNorm2dParams& p : kCases) {
            SCOPED_TRACE(describe(p));
            const Inputs in = make_inputs(p);
            const std::vector<Vec> r = run_cpu(p, in.x, in.g, in.b, in.dy).all();
            const std::vector<Vec> s = spec(p, in.x, in.g, in.b, in.dy).all();
            for (std::size_t i = 0; i < r.size(); ++i)
                EXPECT_TRUE(test::bitwise_equal(r[i], s[i])) << "output " << i;
        }
    });
}

// Bounds: a sum of L = HW + ceil(log2 N) terms errs by at most L * eps * sum|terms|; those errors
// are propagated to invstd, xhat, y and dx to first order, plus a few roundings per formula.
TEST(BatchNorm2d, CpuWithinBoundOfDoubleReference) {
    for (const BatchNorm2dParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Inputs in = make_inputs(p);
        const Outs r = run_cpu(p, in.x, in.g, in.b, in.dy);
        const VecD x = test::to_double(in.x), g = test::to_double(in.g), b = test::to_double(in.b),
                   dy = test::to_double(in.dy);
        const int64_t n = numel(p);
        VecD mean(p.C), var(p.C), is(p.C), y(n), dx(n), dg(p.C), db(p.C);
        ref::batchnorm2d_stats(x.data(), mean.data(), var.data(), is.data(), p);
        ref::batchnorm2d_apply(x.data(), mean.data(), is.data(), g.data(), b.data(), y.data(), p);
        ref::batchnorm2d_backward(dy.data(), x.data(), mean.data(), is.data(), g.data(), dx.data(),
                                  dg.data(), db.data(), true, p);
        const double count = static_cast<double>(p.N * p.HW);
        const double L = p.HW + std::ceil(std::log2(static_cast<double>(p.N))) + 2;
        const test::BatchNormBounds bd = test::batchnorm_bounds(p, L, x, dy, mean, var, is);
        VecD by(n), bdx(n);
        for (int64_t k = 0; k < n; ++k) {
            const int64_t c = (k / p.HW) % p.C;
            const double xh = std::fabs(x[k] - mean[c]) * is[c];
            by[k] = g[c] * bd.xhat[k] + 2 * kEps32 * (xh * g[c] + std::fabs(b[c]));
            const double kk = g[c] * is[c] / count;
            const double inner =
                count * std::fabs(dy[k]) + std::fabs(db[c]) + xh * std::fabs(dg[c]);
            bdx[k] = kk * (bd.dbeta[c] + xh * bd.dgamma[c] + std::fabs(dg[c]) * bd.xhat[k] +
                           3 * kEps32 * inner) +
                     std::fabs(dx[k]) * (bd.invstd[c] / is[c] + 4 * kEps32);
        }
        EXPECT_TRUE(test::within_bound(r.mean.data(), mean.data(), bd.mean.data(), p.C));
        EXPECT_TRUE(test::within_bound(r.var.data(), var.data(), bd.var.data(), p.C));
        EXPECT_TRUE(test::within_bound(r.invstd.data(), is.data(), bd.invstd.data(), p.C));
        EXPECT_TRUE(test::within_bound(r.y.data(), y.data(), by.data(), n));
        EXPECT_TRUE(test::within_bound(r.dbeta.data(), db.data(), bd.dbeta.data(), p.C));
        EXPECT_TRUE(test::within_bound(r.dgamma.data(), dg.data(), bd.dgamma.data(), p.C));
        EXPECT_TRUE(test::within_bound(r.dx.data(), dx.data(), bdx.data(), n));
    }
}

TEST(BatchNorm2d, EvalModeAndRunningUpdate) {
    const BatchNorm2dParams p{.N = 5, .C = 3, .HW = 6};
    const Inputs in = make_inputs(p);
    Vec rm = {0.1f, -0.2f, 0.3f}, rv = {1.0f, 0.5f, 2.0f}, is(3), y(numel(p)), dx(numel(p));
    Vec dg(3), db(3), mean(3), var(3), bis(3);
    // Eval forward: invstd from the running variance, then the same apply.
    cpu::batchnorm2d_invstd(rv.data(), is.data(), p);
    cpu::batchnorm2d_apply(in.x.data(), rm.data(), is.data(), in.g.data(), in.b.data(), y.data(),
                           p);
    cpu::batchnorm2d_backward(in.dy.data(), in.x.data(), rm.data(), is.data(), in.g.data(),
                              dx.data(), dg.data(), db.data(), false, p);
    for (int64_t k = 0; k < numel(p); ++k) {
        const int64_t c = (k / p.HW) % p.C;
        const float isc = 1.0f / std::sqrt(rv[c] + p.eps);
        ASSERT_EQ(test::bits(y[k]), test::bits(((in.x[k] - rm[c]) * isc) * in.g[c] + in.b[c]));
        ASSERT_EQ(test::bits(dx[k]), test::bits(in.dy[k] * (in.g[c] * isc)));  // ORDER
    }
    // Running update, PyTorch semantics with the unbiased variance.
    Vec rm0 = rm, rv0 = rv;
    cpu::batchnorm2d_stats(in.x.data(), mean.data(), var.data(), bis.data(), p);
    cpu::batchnorm2d_update_running(rm.data(), rv.data(), mean.data(), var.data(), 0.1f, p);
    VecD rmd = test::to_double(rm0), rvd = test::to_double(rv0);
    VecD meand = test::to_double(mean), vard = test::to_double(var);
    ref::batchnorm2d_update_running(rmd.data(), rvd.data(), meand.data(), vard.data(),
                                    static_cast<double>(0.1f), p);
    EXPECT_TRUE(test::within_abs(rm.data(), rmd.data(), 4 * kEps32, 3));
    EXPECT_TRUE(test::within_abs(rv.data(), rvd.data(), 8 * kEps32 * 2.0, 3));
    const float count = 30.0f, keep = 1.0f - 0.1f;
    for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(test::bits(rm[c]), test::bits(keep * rm0[c] + 0.1f * mean[c]));
        EXPECT_EQ(test::bits(rv[c]),
                  test::bits(keep * rv0[c] + 0.1f * (var[c] * (count / (count - 1.0f)))));
    }
}

TEST(BatchNorm2d, ThreadCountChangesNoBit) {
    const BatchNorm2dParams p{.N = 37, .C = 16, .HW = 196};
    const Inputs in = make_inputs(p);
    test::expect_same_bits_at_thread_counts(
        [&] { return run_cpu(p, in.x, in.g, in.b, in.dy).all(); }, {2, 3, 4, 7});
}

}  // namespace
}  // namespace dt::kernels
