// SPDX-License-Identifier: MIT
// Pins the layer_norm recipe of kernels/layer_norm.h on the CPU: the kernels equal a plain float
// evaluation of the tree recipe (32 strided leaves per row, each a chain in index order, their
// pairwise tree; a leaf per sequence over its tokens, the tree over sequences; the stated
// elementwise orders) bit for bit; every mode lies within the derived bounds of the double
// reference (tests/support/layer_norm_bounds.h); no thread count changes a bit; and a token's
// outputs do not depend on the other tokens of the batch. Shapes: C = 1, odd C, one round of 32
// plus a tail, GPT-2's 768, M = 1, and one above the parallel threshold. The other modes'
// recipes are the accumulation-mode tester's (tests/kernels/modes/layer_norm_entries.cpp).
#include "kernels/layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/ref/layer_norm_ref.h"
#include "tests/support/compare.h"
#include "tests/support/layer_norm_bounds.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using Vec = std::vector<float>;
using VecD = std::vector<double>;

// (M, C, T): C = 1; odd C; 32 + a tail; M = 1 at GPT-2's C; C = 768 over sequences; C < 32
// with many sequences; above the parallel threshold (M * C >= 32768).
const LayerNormParams kCases[] = {{.M = 4, .C = 1, .T = 2},     {.M = 6, .C = 7, .T = 3},
                                  {.M = 5, .C = 45, .T = 1},    {.M = 1, .C = 768, .T = 1},
                                  {.M = 8, .C = 768, .T = 4},   {.M = 90, .C = 13, .T = 9},
                                  {.M = 256, .C = 192, .T = 64}};

std::string describe(const LayerNormParams& p) {
    return "M=" + std::to_string(p.M) + " C=" + std::to_string(p.C) + " T=" + std::to_string(p.T);
}

struct Inputs {
    Vec x, gamma, beta, dy;
};

/// x with a per-token offset (the two-pass variance matters), gamma around 1.
Inputs make_inputs(const LayerNormParams& p) {
    const int64_t n = p.M * p.C;
    Inputs in{test::uniform_floats(n, -2.0f, 2.0f, test::test_seed(), 1),
              test::uniform_floats(p.C, 0.5f, 1.5f, test::test_seed(), 2),
              test::uniform_floats(p.C, -1.0f, 1.0f, test::test_seed(), 3),
              test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 4)};
    for (int64_t k = 0; k < n; ++k) in.x[k] = in.x[k] + 0.75f * static_cast<float>(k / p.C % 5);
    return in;
}

struct Outs {
    Vec y, mean, rstd, dx, dgamma, dbeta;
    std::vector<Vec> all() const { return {y, mean, rstd, dx, dgamma, dbeta}; }
};

Outs run_cpu(const LayerNormParams& p, const Inputs& in) {
    const auto n = static_cast<std::size_t>(p.M * p.C), M = static_cast<std::size_t>(p.M),
               C = static_cast<std::size_t>(p.C);
    Outs r{Vec(n), Vec(M), Vec(M), Vec(n), Vec(C), Vec(C)};
    cpu::layer_norm_forward(in.x.data(), in.gamma.data(), in.beta.data(), r.y.data(), r.mean.data(),
                            r.rstd.data(), p);
    cpu::layer_norm_backward(in.dy.data(), in.x.data(), r.mean.data(), r.rstd.data(),
                             in.gamma.data(), r.dx.data(), r.dgamma.data(), r.dbeta.data(), p);
    return r;
}

// ---- the tree recipe, written plainly in float ----

/// R: leaf j = +0 + term(j) + term(j + 32) + ..., then the tree over min(C, 32) leaves.
template <class Term>
float row_tree(int64_t C, Term term) {
    Vec leaves(static_cast<std::size_t>(C < 32 ? C : 32), 0.0f);
    for (int64_t i = 0; i < C; ++i) leaves[i % 32] = leaves[i % 32] + term(i);
    return common::reduce_tree_combine(leaves.data(), static_cast<int64_t>(leaves.size()));
}

/// G: leaf b = +0 + term(b * T) + term(b * T + 1) + ..., then the tree over the B leaves.
template <class Term>
float grad_tree(const LayerNormParams& p, Term term) {
    Vec leaves(static_cast<std::size_t>(p.M / p.T), 0.0f);
    for (int64_t m = 0; m < p.M; ++m) leaves[m / p.T] = leaves[m / p.T] + term(m);
    return common::reduce_tree_combine(leaves.data(), static_cast<int64_t>(leaves.size()));
}

Outs recipe(const LayerNormParams& p, const Inputs& in) {
    Outs s;
    const float count = static_cast<float>(p.C);
    const auto at = [&](const Vec& v, int64_t m, int64_t i) { return v[m * p.C + i]; };
    for (int64_t m = 0; m < p.M; ++m) {
        const float mu = row_tree(p.C, [&](int64_t i) { return at(in.x, m, i); }) / count;
        const float var =
            row_tree(p.C,
                     [&](int64_t i) { return (at(in.x, m, i) - mu) * (at(in.x, m, i) - mu); }) /
            count;
        const float rs = 1.0f / std::sqrt(var + p.eps);
        s.mean.push_back(mu);
        s.rstd.push_back(rs);
        const auto xhat = [&](int64_t i) { return (at(in.x, m, i) - mu) * rs; };
        const auto g = [&](int64_t i) { return at(in.dy, m, i) * in.gamma[i]; };
        for (int64_t i = 0; i < p.C; ++i) s.y.push_back(xhat(i) * in.gamma[i] + in.beta[i]);
        const float m1 = row_tree(p.C, g) / count;
        const float m2 = row_tree(p.C, [&](int64_t i) { return g(i) * xhat(i); }) / count;
        for (int64_t i = 0; i < p.C; ++i) s.dx.push_back(rs * ((g(i) - m1) - xhat(i) * m2));
    }
    for (int64_t c = 0; c < p.C; ++c) {
        s.dbeta.push_back(grad_tree(p, [&](int64_t m) { return at(in.dy, m, c); }));
        s.dgamma.push_back(grad_tree(p, [&](int64_t m) {
            return at(in.dy, m, c) * ((at(in.x, m, c) - s.mean[m]) * s.rstd[m]);
        }));
    }
    return s;
}

TEST(LayerNorm, CpuEqualsTheTreeRecipeBitwise) {
    for (const LayerNormParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Inputs in = make_inputs(p);
        const std::vector<Vec> r = run_cpu(p, in).all(), s = recipe(p, in).all();
        for (std::size_t i = 0; i < r.size(); ++i)
            EXPECT_TRUE(test::bitwise_equal(r[i], s[i])) << "output " << i;
    }
}

TEST(LayerNorm, CpuWithinBoundOfDoubleReferenceInEveryMode) {
    for (const LayerNormParams& shape : kCases) {
        SCOPED_TRACE(describe(shape));
        const Inputs in = make_inputs(shape);
        const VecD x = test::to_double(in.x), g = test::to_double(in.gamma),
                   b = test::to_double(in.beta), dy = test::to_double(in.dy);
        for (const common::AccumSpec& spec : test::all_mode_specs(77)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            LayerNormParams p = shape;
            p.accum = spec;
            const Outs r = run_cpu(p, in);
            const auto n = static_cast<std::size_t>(p.M * p.C), M = static_cast<std::size_t>(p.M);
            VecD y(n), mean(M), rstd(M);
            ref::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(),
                                    rstd.data(), p);
            const test::LayerNormForwardBounds fb = test::layer_norm_forward_bounds(
                p, test::layer_norm_row_terms(p.C, spec.mode), x, g, b, mean, rstd);
            EXPECT_TRUE(test::within_bound(r.y.data(), y.data(), fb.y.data(), p.M * p.C));
            EXPECT_TRUE(test::within_bound(r.mean.data(), mean.data(), fb.mean.data(), p.M));
            EXPECT_TRUE(test::within_bound(r.rstd.data(), rstd.data(), fb.rstd.data(), p.M));
            // The backward from the kernel's own mean and rstd (inputs of the reference too).
            const VecD km = test::to_double(r.mean), kr = test::to_double(r.rstd);
            VecD dx(n), dg(g.size()), db(g.size());
            ref::layer_norm_backward(dy.data(), x.data(), km.data(), kr.data(), g.data(), dx.data(),
                                     dg.data(), db.data(), p);
            const std::vector<VecD> bb = test::layer_norm_backward_scaled(
                p, in.dy, in.x, r.mean, r.rstd, in.gamma,
                test::layer_norm_backward_bound_scales(p, spec.mode));
            EXPECT_TRUE(test::within_bound(r.dx.data(), dx.data(), bb[0].data(), p.M * p.C));
            EXPECT_TRUE(test::within_bound(r.dgamma.data(), dg.data(), bb[1].data(), p.C));
            EXPECT_TRUE(test::within_bound(r.dbeta.data(), db.data(), bb[2].data(), p.C));
        }
    }
}

TEST(LayerNorm, ThreadCountChangesNoBit) {
    for (const LayerNormParams& shape : {LayerNormParams{.M = 256, .C = 192, .T = 64},
                                         LayerNormParams{.M = 9, .C = 5000, .T = 3}}) {
        SCOPED_TRACE(describe(shape));
        const Inputs in = make_inputs(shape);
        for (const common::AccumSpec& spec : test::all_mode_specs(78)) {
            if (spec.mode == common::AccumMode::kAtomic) continue;  // its G races on purpose
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            LayerNormParams p = shape;
            p.accum = spec;
            test::expect_same_bits_at_thread_counts([&] { return run_cpu(p, in).all(); },
                                                    {2, 3, 4, 7});
        }
    }
}

// Batch invariance (docs/notes on GPT parity): a token's y, mean, rstd and dx are the same bits
// whether it is normalised alone, in a short batch or in a long one, in every mode.
TEST(LayerNorm, ATokensOutputsDoNotDependOnTheBatch) {
    const LayerNormParams whole{.M = 256, .C = 192, .T = 64};
    const Inputs in = make_inputs(whole);
    for (const common::AccumSpec& spec : test::all_mode_specs(79)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        LayerNormParams p = whole;
        p.accum = spec;
        const Outs all = run_cpu(p, in);
        for (int64_t M : {1, 3}) {
            LayerNormParams q = p;
            q.M = M, q.T = 1;
            const Outs part = run_cpu(q, in);  // the first M tokens' rows of every input
            const auto rows = [&](const Vec& v, int64_t per) {
                return Vec(v.begin(), v.begin() + M * per);
            };
            EXPECT_TRUE(test::bitwise_equal(part.y, rows(all.y, p.C))) << M;
            EXPECT_TRUE(test::bitwise_equal(part.mean, rows(all.mean, 1))) << M;
            EXPECT_TRUE(test::bitwise_equal(part.rstd, rows(all.rstd, 1))) << M;
            EXPECT_TRUE(test::bitwise_equal(part.dx, rows(all.dx, p.C))) << M;
        }
    }
}

}  // namespace
}  // namespace dt::kernels
