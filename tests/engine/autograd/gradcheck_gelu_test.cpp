// SPDX-License-Identifier: MIT
// Reference GELU backward vs central differences of the reference forward.
#include <gtest/gtest.h>

#include "kernels/ref/gelu_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace {

TEST(GradcheckGelu, ReferenceBackward) {
    EXPECT_TRUE(
        dt::test::unary_gradcheck(dt::kernels::ref::gelu_forward, dt::kernels::ref::gelu_backward,
                                  dt::test::to_double(dt::test::uniform_floats(41, -5, 5, 9)),
                                  dt::test::to_double(dt::test::uniform_floats(41, -1, 1, 10))));
}

}  // namespace
