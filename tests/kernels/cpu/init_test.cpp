// SPDX-License-Identifier: MIT
// Pins the weight-init recipe of kernels/init.h: every value is the double reference rounded to
// float, bit for bit (only the product by the bound rounds); values fill [-bound, bound); seed and
// sub select the stream; no thread count changes a bit.
#include "kernels/init.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/ref/init_ref.h"
#include "tests/support/compare.h"

namespace dt::kernels {
namespace {

std::vector<float> run(const InitUniformParams& p) {
    std::vector<float> v(static_cast<std::size_t>(p.n), NAN);
    cpu::init_uniform(v.data(), p);
    return v;
}

TEST(InitUniform, EqualsTheDoubleReferenceRoundedToFloat) {
    for (const InitUniformParams& p :
         {InitUniformParams{1, 0, 0, 1.0f}, InitUniformParams{3, 7, 1, 0.0721f},
          InitUniformParams{40001, 0x5eed1234abcdULL, 12, 0.3f},
          InitUniformParams{1000, ~0ULL, 0xffffffffu, 3.1e-3f}}) {
        SCOPED_TRACE(p.n);
        const std::vector<float> got = run(p);
        std::vector<double> want(static_cast<std::size_t>(p.n));
        ref::init_uniform(want.data(), p);
        for (int64_t i = 0; i < p.n; ++i)
            ASSERT_EQ(got[i], static_cast<float>(want[i])) << "element " << i;
    }
}

TEST(InitUniform, FillsTheBoundsAndTheStreamIsSeedAndSub) {
    const InitUniformParams p{50000, 42, 3, 0.5f};
    const std::vector<float> v = run(p);
    float lo = 1, hi = -1;
    for (float x : v) {
        ASSERT_GE(x, -0.5f);
        ASSERT_LT(x, 0.5f);
        lo = std::min(lo, x), hi = std::max(hi, x);
    }
    EXPECT_LT(lo, -0.499f);
    EXPECT_GT(hi, 0.499f);
    InitUniformParams q = p;
    q.sub = 4;
    EXPECT_FALSE(test::bitwise_equal(run(q), v));
    q = p;
    q.seed = 43;
    EXPECT_FALSE(test::bitwise_equal(run(q), v));
    q = p;
    q.n = 10;  // a prefix of a longer weight: element i depends on i alone
    const std::vector<float> prefix = run(q);
    EXPECT_TRUE(test::bitwise_equal(prefix, std::vector<float>(v.begin(), v.begin() + 10)));
    EXPECT_TRUE(run({0, 1, 2, 1.0f}).empty());
}

TEST(InitUniform, ThreadCountChangesNoBit) {
    const InitUniformParams p{100003, 9, 5, 0.125f};
    omp_set_num_threads(1);
    const std::vector<float> first = run(p);
    for (int t : {2, 3, 7}) {
        omp_set_num_threads(t);
        EXPECT_TRUE(test::bitwise_equal(run(p), first)) << "threads=" << t;
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
