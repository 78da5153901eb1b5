// SPDX-License-Identifier: MIT
// Pins the softmax cross-entropy recipe of kernels/softmax_xent.h: the CPU kernels equal a plain
// float evaluation of the recipe (dt_expf/dt_logf, class-order sums, tree over samples) bit for
// bit; they are within derived bounds of the std::exp/std::log double reference (exp/log at most
// 2 ulp, a K-term sum at most K * eps relative); argmax takes the first maximum; no thread count
// changes a bit.
#include "kernels/softmax_xent.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/fast_math.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/ref/softmax_xent_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using common::dt_expf;
using common::dt_logf;
using test::kEps32;
using Vec = std::vector<float>;
using VecD = std::vector<double>;

struct Case {
    int64_t N, K;
    float spread;  // logits uniform in [-spread, spread)
};
const Case kCases[] = {{1, 1, 1.0f},   {1, 10, 3.0f},   {7, 10, 5.0f},
                       {33, 3, 40.0f}, {128, 10, 8.0f}, {17, 100, 2.0f}};

std::vector<int64_t> make_labels(int64_t N, int64_t K, uint32_t tag) {
    Vec u = test::uniform_floats(N, 0.0f, 1.0f, test::test_seed(), tag);
    std::vector<int64_t> l;
    for (float v : u) l.push_back(static_cast<int64_t>(v * static_cast<float>(K)) % K);
    return l;
}

/// A case's logits (N, K), uniform in [-spread, spread) keyed by `tag`, and labels (tag + 1).
struct Inputs {
    SoftmaxXentParams p;
    Vec logits;
    std::vector<int64_t> labels;
};
Inputs make_inputs(const Case& c, uint32_t tag) {
    return {{.N = c.N, .K = c.K},
            test::uniform_floats(c.N * c.K, -c.spread, c.spread, test::test_seed(), tag),
            make_labels(c.N, c.K, tag + 1)};
}

struct Out {
    Vec rowmax, rowsum, rows, dlogits;
    float loss = 0.0f;
};

Out run(const SoftmaxXentParams& p, const Vec& l, const std::vector<int64_t>& lab, float dloss) {
    Out o{Vec(p.N), Vec(p.N), Vec(p.N), Vec(p.N * p.K)};
    cpu::softmax_xent_forward(l.data(), lab.data(), o.rowmax.data(), o.rowsum.data(), o.rows.data(),
                              &o.loss, p);
    cpu::softmax_xent_backward(l.data(), lab.data(), o.rowmax.data(), o.rowsum.data(), &dloss,
                               o.dlogits.data(), p);
    return o;
}

Out spec(const SoftmaxXentParams& p, const Vec& l, const std::vector<int64_t>& lab, float dloss) {
    Out o;
    for (int64_t n = 0; n < p.N; ++n) {
        const float* r = l.data() + n * p.K;
        float m = r[0];
        for (int64_t k = 1; k < p.K; ++k) m = r[k] > m ? r[k] : m;
        float s = 0.0f;
        for (int64_t k = 0; k < p.K; ++k) s = s + dt_expf(r[k] - m);
        o.rowmax.push_back(m);
        o.rowsum.push_back(s);
        o.rows.push_back(dt_logf(s) - (r[lab[n]] - m));
    }
    o.loss = common::reduce_tree_combine(o.rows.data(), p.N) / static_cast<float>(p.N);
    const float g = dloss / static_cast<float>(p.N);
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t k = 0; k < p.K; ++k) {
            const float prob = dt_expf(l[n * p.K + k] - o.rowmax[n]) / o.rowsum[n];
            o.dlogits.push_back((prob - (k == lab[n] ? 1.0f : 0.0f)) * g);
        }
    return o;
}

TEST(SoftmaxXent, CpuEqualsTheRecipeBitwise) {
    for (const Case& c : kCases) {
        SCOPED_TRACE("N=" + std::to_string(c.N) + " K=" + std::to_string(c.K));
        const auto [p, l, lab] = make_inputs(c, 1);
        const Out o = run(p, l, lab, 0.75f), s = spec(p, l, lab, 0.75f);
        EXPECT_TRUE(test::bitwise_equal(o.rowmax, s.rowmax));
        EXPECT_TRUE(test::bitwise_equal(o.rowsum, s.rowsum));
        EXPECT_TRUE(test::bitwise_equal(o.rows, s.rows));
        EXPECT_EQ(test::bits(o.loss), test::bits(s.loss));
        EXPECT_TRUE(test::bitwise_equal(o.dlogits, s.dlogits));
    }
}

TEST(SoftmaxXent, CpuWithinBoundOfDoubleReference) {
    for (const Case& c : kCases) {
        SCOPED_TRACE("N=" + std::to_string(c.N) + " K=" + std::to_string(c.K));
        const auto [p, l, lab] = make_inputs(c, 3);
        const float dloss = 1.5f;
        const Out o = run(p, l, lab, dloss);
        const VecD ld = test::to_double(l);
        VecD m(c.N), s(c.N), rows(c.N), dl(c.N * c.K), b_rows(c.N), b_dl(c.N * c.K);
        double loss = 0;
        ref::softmax_xent_forward(ld.data(), lab.data(), m.data(), s.data(), rows.data(), &loss, p);
        ref::softmax_xent_backward(ld.data(), lab.data(), m.data(), s.data(), dloss, dl.data(), p);
        double b_sum = 0, abs_sum = 0;
        const double K = static_cast<double>(c.K);
        for (int64_t n = 0; n < c.N; ++n) {
            const double z = std::fabs(ld[n * c.K + lab[n]] - m[n]);
            // exp: 2 ulp + argument rounding; K-term sum; log: 2 ulp; two subtractions.
            b_rows[n] = (K + 3) * kEps32 + 2 * kEps32 * (std::log(s[n]) + z + std::fabs(rows[n]));
            b_sum += b_rows[n];
            abs_sum += std::fabs(rows[n]);
            for (int64_t k = 0; k < c.K; ++k) {
                const double zk = std::fabs(ld[n * c.K + k] - m[n]);
                const double prob = std::exp(-zk) / s[n];
                const double diff = std::fabs(prob - (k == lab[n] ? 1.0 : 0.0));
                b_dl[n * c.K + k] =
                    dloss / c.N * (prob * (K + 5 + zk) * kEps32 + 2 * kEps32 * diff);
            }
        }
        const double depth = std::ceil(std::log2(static_cast<double>(c.N)));
        const double b_loss = (b_sum + (depth + 2) * kEps32 * abs_sum) / c.N;
        EXPECT_TRUE(test::within_bound(o.rows.data(), rows.data(), b_rows.data(), c.N));
        EXPECT_TRUE(test::within_bound(&o.loss, &loss, &b_loss, 1));
        EXPECT_TRUE(test::within_bound(o.dlogits.data(), dl.data(), b_dl.data(), c.N * c.K));
    }
}

TEST(SoftmaxXent, LargeLogitsStayFinite) {
    const SoftmaxXentParams p{.N = 2, .K = 3};
    const Vec l = {1000.0f, -1000.0f, 0.0f, -80.0f, -80.0f, -80.0f};
    const std::vector<int64_t> lab = {1, 2};
    const Out o = run(p, l, lab, 1.0f);
    EXPECT_FLOAT_EQ(o.rows[0], 2000.0f);
    EXPECT_FLOAT_EQ(o.rows[1], std::log(3.0f));
    for (float v : o.dlogits) EXPECT_TRUE(std::isfinite(v));
}

TEST(SoftmaxXent, ArgmaxTakesTheFirstMaximum) {
    const Vec x = {1.0f, 3.0f, 3.0f, 0.0f, -1.0f, -1.0f, -1.0f, -1.0f,
                   0.0f, 0.0f, 2.0f, 2.0f, 5.0f,  -9.0f, 5.0f,  4.0f};
    std::vector<int64_t> out(4);
    cpu::argmax_rows(x.data(), out.data(), 4, 4);
    EXPECT_EQ(out, (std::vector<int64_t>{1, 0, 2, 0}));
}

TEST(SoftmaxXent, ThreadCountChangesNoBit) {
    const SoftmaxXentParams p{.N = 1031, .K = 37};
    const Vec l = test::uniform_floats(p.N * p.K, -6.0f, 6.0f, test::test_seed(), 5);
    const auto lab = make_labels(p.N, p.K, 6);
    test::expect_same_bits_at_thread_counts(
        [&] {
            const Out o = run(p, l, lab, 1.0f);
            return std::vector<Vec>{{o.loss}, o.rows, o.dlogits};
        },
        {2, 3, 4, 7});
}

}  // namespace
}  // namespace dt::kernels
