// SPDX-License-Identifier: MIT
// The rounding of exact accumulators on the CPU (kernels/exact_round.h): every element is its
// reference's (exact_value's) bits, on short arrays (one thread) and long ones (over the
// threads, any count).
#include "kernels/exact_round.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/exact_round_ref.h"
#include "tests/support/compare.h"
#include "tests/support/exact_accs.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

TEST(ExactRound, EveryElementIsExactValuesBitsForAnyThreadCount) {
    for (int64_t n : {0, 1, 97, 40000}) {
        const std::vector<common::ExactAcc> accs = test::random_exact_accs(n, test::test_seed());
        std::vector<float> want(static_cast<std::size_t>(n));
        ref::exact_round(accs.data(), n, want.data());
        test::expect_same_bits_at_thread_counts([&] {
            std::vector<float> out(static_cast<std::size_t>(n), -7.0f);
            cpu::exact_round(accs.data(), n, out.data());
            EXPECT_TRUE(test::bitwise_equal(out, want)) << "n=" << n;
            return std::vector<std::vector<float>>{out};
        });
    }
}

}  // namespace
}  // namespace dt::kernels
