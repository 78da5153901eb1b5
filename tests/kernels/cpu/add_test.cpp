// SPDX-License-Identifier: MIT
// Pins the add kernel of kernels/add.h: one correctly rounded add per element, so it equals a + b
// in float and the double reference rounded to float, bit for bit, at any thread count.
#include "kernels/add.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "kernels/ref/add_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

TEST(Add, EqualsOneAddPerElementAtAnyThreadCount) {
    const int64_t n = 100003;  // above the parallel threshold, prime
    const auto a = test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 1);
    const auto b = test::uniform_floats(n, -1e4f, 1e4f, test::test_seed(), 2);
    std::vector<float> want(n);
    std::vector<double> ad = test::to_double(a), bd = test::to_double(b), yd(n);
    ref::add_forward(ad.data(), bd.data(), yd.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        want[i] = a[i] + b[i];
        ASSERT_EQ(want[i], static_cast<float>(yd[i])) << i;  // exact sum rounded once
    }
    for (int t : {1, 2, 3, 4, 7}) {
        omp_set_num_threads(t);
        std::vector<float> y(n);
        cpu::add_forward(a.data(), b.data(), y.data(), n);
        EXPECT_TRUE(test::bitwise_equal(y, want)) << "threads=" << t;
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
