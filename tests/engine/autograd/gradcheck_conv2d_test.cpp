// SPDX-License-Identifier: MIT
// Reference conv2d backward (data, weight, bias) vs central differences in double, on small
// odd shapes with strides 1-2, padding 0-3 and kernels 1, 3, 7 (and a non-square 2x3).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/bias_add_ref.h"
#include "kernels/ref/conv2d_ref.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using test::geom, test::xsize, test::wsize, test::ysize, test::describe;

std::vector<double> randd(int64_t n, uint32_t tag) {
    return test::to_double(test::uniform_floats(n, -1, 1, test::test_seed(), tag));
}

TEST(GradcheckConv2d, ReferenceBackward) {
    const Conv2dParams cases[] = {geom(2, 2, 5, 7, 3, 3, 3, 1, 1), geom(1, 3, 7, 6, 2, 3, 3, 2, 1),
                                  geom(2, 2, 5, 5, 3, 1, 1, 1, 0), geom(1, 2, 5, 7, 2, 1, 1, 2, 0),
                                  geom(1, 1, 9, 8, 2, 7, 7, 1, 3), geom(2, 2, 9, 9, 2, 7, 7, 2, 2),
                                  geom(1, 2, 6, 5, 2, 2, 3, 1, 0)};
    for (const Conv2dParams& p : cases) {
        SCOPED_TRACE(describe(p));
        const int64_t nx = xsize(p), nw = wsize(p), ny = ysize(p);
        const auto x = randd(nx, 1), w = randd(nw, 2), b = randd(p.co, 3), dy = randd(ny, 4);
        std::vector<double> dx(nx), dw(nw), db(p.co);
        ref::conv2d_backward_data(dy.data(), w.data(), dx.data(), p);
        ref::conv2d_backward_weight(x.data(), dy.data(), dw.data(), p);
        ref::bias_add_backward(dy.data(), db.data(),
                               BiasAddParams{.n = p.n, .c = p.co, .p = p.ho * p.wo});
        test::expect_layer_gradients(ref::conv2d_forward, p, x, w, b, dy, dx, dw, db);
    }
}

}  // namespace
}  // namespace dt::kernels
