// SPDX-License-Identifier: MIT
// Reference linear backward (data, weight, bias) vs central differences in double.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/bias_add_ref.h"
#include "kernels/ref/linear_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

std::vector<double> randd(int64_t n, uint32_t tag) {
    return test::to_double(test::uniform_floats(n, -1, 1, test::test_seed(), tag));
}

TEST(GradcheckLinear, ReferenceBackward) {
    const LinearParams cases[] = {
        {.n = 1, .in = 1, .out = 1}, {.n = 3, .in = 5, .out = 7}, {.n = 9, .in = 13, .out = 4}};
    for (const LinearParams& p : cases) {
        SCOPED_TRACE("n=" + std::to_string(p.n) + " in=" + std::to_string(p.in) +
                     " out=" + std::to_string(p.out));
        const auto x = randd(p.n * p.in, 1), w = randd(p.out * p.in, 2), b = randd(p.out, 3),
                   dy = randd(p.n * p.out, 4);
        std::vector<double> dx(x.size()), dw(w.size()), db(b.size());
        ref::linear_backward_data(dy.data(), w.data(), dx.data(), p);
        ref::linear_backward_weight(x.data(), dy.data(), dw.data(), p);
        ref::bias_add_backward(dy.data(), db.data(), BiasAddParams{.n = p.n, .c = p.out, .p = 1});
        test::expect_layer_gradients(ref::linear_forward, p, x, w, b, dy, dx, dw, db);
    }
}

}  // namespace
}  // namespace dt::kernels
