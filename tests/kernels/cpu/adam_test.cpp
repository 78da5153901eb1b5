// SPDX-License-Identifier: MIT
// Pins the Adam / AdamW update recipe of kernels/adam.h: the kernel (whichever vector clone this
// CPU runs) equals the recipe evaluated here in scalar float operations bit for bit, with and
// without weight decay, decoupled or not; stays within a few float roundings of the double
// reference; and no thread count or block split changes a bit.
#include "kernels/adam.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/ref/adam_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using Vec = std::vector<float>;

struct State {
    Vec p, g, m, v;
};

State make(int64_t n, uint32_t tag) {
    const uint64_t s = test::test_seed();
    Vec v = test::uniform_floats(n, 0, 1e-2f, s, tag + 3);  // second moments are >= 0
    return State{test::uniform_floats(n, -1, 1, s, tag), test::uniform_floats(n, -1, 1, s, tag + 1),
                 test::uniform_floats(n, -0.1f, 0.1f, s, tag + 2), v};
}

/// The coefficients of step t (the optimizer computes them so, engine/optim/adam.cpp).
AdamParams params(int64_t n, float lr, float wd, bool decoupled, int t) {
    AdamParams q;
    q.n = n, q.wd = wd, q.decoupled = decoupled;
    const double b1t = std::pow(0.9, t), b2t = std::pow(0.999, t);
    q.neg_step = -static_cast<float>(lr / (1.0 - b1t));
    q.c2s = static_cast<float>(std::sqrt(1.0 - b2t));
    q.decay = static_cast<float>(1.0 - double{lr} * double{wd});
    return q;
}

/// The recipe, one float operation at a time (no fma: -ffp-contract=off).
void own_adam(State& s, const AdamParams& q) {
    for (int64_t k = 0; k < q.n; ++k) {
        float g = s.g[k], p = s.p[k];
        if (q.wd != 0.0f && q.decoupled) p = p * q.decay;
        if (q.wd != 0.0f && !q.decoupled) g = g + q.wd * p;
        s.m[k] = s.m[k] * q.b1 + q.k1 * g;
        s.v[k] = s.v[k] * q.b2 + (q.k2 * g) * g;
        const float denom = std::sqrt(s.v[k]) / q.c2s + q.eps;
        s.p[k] = p + (q.neg_step * s.m[k]) / denom;
    }
}

void run(State& s, const AdamParams& q) {
    cpu::adam_update(s.p.data(), s.g.data(), s.m.data(), s.v.data(), q);
}

std::vector<AdamParams> variants(int64_t n) {
    std::vector<AdamParams> v;
    for (float wd : {0.0f, 0.01f})
        for (bool decoupled : {false, true})
            for (int t : {1, 7}) v.push_back(params(n, 1e-3f, wd, decoupled, t));
    return v;
}

TEST(Adam, MatchesItsRecipeBitwise) {
    for (int64_t n : {1, 15, 4097, 20000}) {  // tails of the vector loop, several blocks
        for (const AdamParams& q : variants(n)) {
            SCOPED_TRACE(testing::Message() << "n=" << n << " wd=" << q.wd
                                            << " decoupled=" << q.decoupled);
            State a = make(n, 1), b = a;
            run(a, q);
            own_adam(b, q);
            EXPECT_TRUE(test::bitwise_equal(a.p, b.p));
            EXPECT_TRUE(test::bitwise_equal(a.m, b.m));
            EXPECT_TRUE(test::bitwise_equal(a.v, b.v));
        }
    }
}

TEST(Adam, WithinAFewRoundingsOfTheDoubleReference) {
    const int64_t n = 1000;
    for (const AdamParams& q : variants(n)) {
        State a = make(n, 4);
        std::vector<double> p = test::to_double(a.p), g = test::to_double(a.g),
                            m = test::to_double(a.m), v = test::to_double(a.v);
        run(a, q);
        ref::adam_update(p.data(), g.data(), m.data(), v.data(), q);
        for (int64_t k = 0; k < n; ++k) {
            // m, v: two roundings each, relative; p moves by |neg_step * m / denom| <= a few
            // times lr, computed with ~5 roundings of relative eps32/2: well below 1e-6.
            ASSERT_NEAR(a.m[k], m[k], 1e-7 + 4e-7 * std::fabs(m[k])) << "k=" << k;
            ASSERT_NEAR(a.v[k], v[k], 4e-7 * std::fabs(v[k])) << "k=" << k;
            ASSERT_NEAR(a.p[k], p[k], 1e-6) << "k=" << k;
        }
    }
}

TEST(Adam, ThreadCountChangesNoBit) {
    const int64_t n = 50000;  // above the parallel threshold, 13 blocks
    const AdamParams q = params(n, 1e-3f, 0.01f, true, 3);
    test::expect_same_bits_at_thread_counts([&] {
        State s = make(n, 7);
        run(s, q);
        return std::vector<Vec>{s.p, s.m, s.v};
    });
}

}  // namespace
}  // namespace dt::kernels
