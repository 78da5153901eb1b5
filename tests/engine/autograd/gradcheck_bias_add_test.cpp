// SPDX-License-Identifier: MIT
// Reference bias_add backward (bias.grad; dx = dy) vs central differences in double.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/bias_add_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

TEST(GradcheckBiasAdd, ReferenceBackward) {
    const BiasAddParams cases[] = {{.n = 1, .c = 1, .p = 1}, {.n = 3, .c = 4, .p = 1},
                                   {.n = 5, .c = 3, .p = 7}, {.n = 2, .c = 2, .p = 25}};
    for (const BiasAddParams& p : cases) {
        SCOPED_TRACE("n=" + std::to_string(p.n) + " c=" + std::to_string(p.c) +
                     " p=" + std::to_string(p.p));
        const int64_t numel = p.n * p.c * p.p;
        const uint64_t seed = test::test_seed();
        const auto x = test::to_double(test::uniform_floats(numel, -1, 1, seed, 1));
        const auto b = test::to_double(test::uniform_floats(p.c, -1, 1, seed, 2));
        const auto dy = test::to_double(test::uniform_floats(numel, -1, 1, seed, 3));
        std::vector<double> db(p.c);
        ref::bias_add_backward(dy.data(), db.data(), p);
        auto fwd = [&](const std::vector<double>& xi, const std::vector<double>& bi) {
            std::vector<double> y(numel);
            ref::bias_add_forward(xi.data(), bi.data(), y.data(), p);
            return y;
        };
        EXPECT_TRUE(test::gradcheck([&](const auto& v) { return fwd(v, b); }, x, dy, dy)) << "dx";
        EXPECT_TRUE(test::gradcheck([&](const auto& v) { return fwd(x, v); }, b, dy, db)) << "db";
    }
}

}  // namespace
}  // namespace dt::kernels
