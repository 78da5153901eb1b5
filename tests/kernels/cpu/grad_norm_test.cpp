// SPDX-License-Identifier: MIT
// The global gradient norm's CPU kernels (kernels/grad_norm.h) beyond the accumulation-mode
// tester (tests/kernels/modes/grad_norm_sq_each_entry.cpp): clipping only past the limit, by the
// recipe's one quotient; a NaN norm clips nothing; an infinite one zeroes.
#include "kernels/grad_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/compare.h"

namespace dt::kernels {
namespace {

std::vector<float> clipped(std::vector<float> g, float total, float max_norm) {
    const GradBuffer b{g.data(), static_cast<int64_t>(g.size())};
    cpu::grad_clip_each(&b, 1, &total, max_norm);
    return g;
}

TEST(GradNormKernel, ClipsOnlyPastTheLimitByOneQuotient) {
    const std::vector<float> g = {3.0f, -4.0f, 0.1f};
    EXPECT_EQ(clipped(g, 25.0f, 5.0f), g);   // norm 5 == limit: as it is
    EXPECT_EQ(clipped(g, 25.0f, 10.0f), g);  // below
    const float scale = 1.0f / 5.0f;         // max_norm / norm, rounded once
    EXPECT_EQ(clipped(g, 25.0f, 1.0f),
              (std::vector<float>{3.0f * scale, -4.0f * scale, 0.1f * scale}));
}

TEST(GradNormKernel, NonFiniteNorms) {
    const std::vector<float> g = {1.0f, -2.0f};
    EXPECT_EQ(clipped(g, NAN, 1.0f), g);
    const std::vector<float> z = clipped(g, std::numeric_limits<float>::infinity(), 1.0f);
    EXPECT_EQ(z[0], 0.0f);
    EXPECT_EQ(z[1], 0.0f);
}

TEST(GradNormKernel, SumOfSquaresOfNoBufferIsZero) {
    for (common::AccumMode m : common::kAccumModes) {
        float total = NAN;
        cpu::grad_norm_sq_each(nullptr, 0, &total, {common::accum_spec(m)});
        EXPECT_EQ(test::bits(total), test::bits(0.0f));
    }
}

}  // namespace
}  // namespace dt::kernels
