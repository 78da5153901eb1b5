// SPDX-License-Identifier: MIT
// dt::round_exact (engine/runtime/exact_round.h) refuses what is not a tensor of accumulators:
// another dtype, or a word count that does not make whole accumulators of the shape.
#include "engine/runtime/exact_round.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/core/error.h"
#include "tests/support/errors.h"

namespace dt {
namespace {

TEST(RoundExact, RefusesWhatIsNotAccumulatorsOfTheShape) {
    const std::string dtype =
        test::message_of<DTypeError>([] { round_exact(Tensor::zeros({2 * kExactAccWords}), {2}); });
    EXPECT_TRUE(test::has(dtype, "int64")) << dtype;
    const std::string size = test::message_of<ShapeError>(
        [] { round_exact(Tensor::zeros({2 * kExactAccWords}, DType::kI64), {3}); });
    EXPECT_TRUE(test::has(size, "not the " + std::to_string(3 * kExactAccWords))) << size;
    EXPECT_EQ(round_exact(Tensor::zeros({2 * kExactAccWords}, DType::kI64), {2, 1}).shape(),
              (Shape{2, 1}));
}

}  // namespace
}  // namespace dt
