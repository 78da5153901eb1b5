// SPDX-License-Identifier: MIT
// Pins the SGD update recipe of kernels/sgd.h: the kernel equals the recipe evaluated here in
// scalar float operations bit for bit (plain, momentum first and later updates, Nesterov, weight
// decay), stays within a few float roundings of the double reference, and no thread count
// changes a bit.
#include "kernels/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/ref/sgd_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

using Vec = std::vector<float>;

struct State {
    Vec p, g, buf;
};

State make(int64_t n, uint32_t tag) {
    const uint64_t s = test::test_seed();
    return State{test::uniform_floats(n, -1, 1, s, tag), test::uniform_floats(n, -1, 1, s, tag + 1),
                 test::uniform_floats(n, -1, 1, s, tag + 2)};
}

/// The recipe, one float operation at a time (no fma: -ffp-contract=off).
void own_sgd(State& s, const SgdParams& q) {
    for (int64_t k = 0; k < q.n; ++k) {
        float g = s.g[k];
        if (q.weight_decay != 0.0f) g = g + q.weight_decay * s.p[k];
        if (q.momentum != 0.0f) {
            const float b = q.first ? g : q.momentum * s.buf[k] + g;
            s.buf[k] = b;
            g = q.nesterov ? g + q.momentum * b : b;
        }
        s.p[k] = s.p[k] - q.lr * g;
    }
}

void run(State& s, const SgdParams& q) {
    cpu::sgd_update(s.p.data(), s.g.data(), q.momentum != 0.0f ? s.buf.data() : nullptr, q);
}

std::vector<SgdParams> variants(int64_t n) {
    std::vector<SgdParams> v;
    for (float mom : {0.0f, 0.9f})
        for (bool nesterov : {false, true})
            for (float wd : {0.0f, 5e-4f})
                for (bool first : {false, true}) {
                    if (nesterov && mom == 0.0f) continue;
                    v.push_back(SgdParams{.n = n, .lr = 0.05f, .momentum = mom,
                                          .weight_decay = wd, .nesterov = nesterov,
                                          .first = first});
                }
    return v;
}

TEST(Sgd, MatchesItsRecipeBitwise) {
    for (int64_t n : {1, 17, 40000}) {
        for (const SgdParams& q : variants(n)) {
            SCOPED_TRACE(testing::Message() << "n=" << n << " momentum=" << q.momentum
                                            << " nesterov=" << q.nesterov << " wd="
                                            << q.weight_decay << " first=" << q.first);
            State a = make(n, 1), b = a;
            run(a, q);
            own_sgd(b, q);
            EXPECT_TRUE(test::bitwise_equal(a.p, b.p));
            EXPECT_TRUE(test::bitwise_equal(a.buf, b.buf));
        }
    }
}

TEST(Sgd, WithinAFewRoundingsOfTheDoubleReference) {
    const int64_t n = 1000;
    for (const SgdParams& q : variants(n)) {
        State a = make(n, 4);
        std::vector<double> p = test::to_double(a.p), g = test::to_double(a.g),
                            buf = test::to_double(a.buf);
        run(a, q);
        ref::sgd_update(p.data(), g.data(), q.momentum != 0.0f ? buf.data() : nullptr, q);
        for (int64_t k = 0; k < n; ++k) {
            // Each of at most 6 roundings is below eps32/2 of a value bounded by 4 (|p|, |g|,
            // |buf| <= 1, momentum < 1, lr < 1): 6 * 2^-24 * 4 with margin.
            ASSERT_NEAR(a.p[k], p[k], 4e-6) << "k=" << k;
        }
    }
}

TEST(Sgd, ThreadCountChangesNoBit) {
    const int64_t n = 100000;  // above the parallel threshold
    const SgdParams q{.n = n, .lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f,
                      .nesterov = true};
    test::expect_same_bits_at_thread_counts([&] {
        State s = make(n, 7);
        run(s, q);
        return std::vector<Vec>{s.p, s.buf};
    });
}

}  // namespace
}  // namespace dt::kernels
