// SPDX-License-Identifier: MIT
// Double-precision gradient check of the reference softmax cross-entropy backward
// (kernels/ref) against central differences of the mean loss, for an upstream gradient != 1.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/softmax_xent_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using VecD = std::vector<double>;

TEST(GradcheckSoftmaxXent, Logits) {
    for (const SoftmaxXentParams p :
         {SoftmaxXentParams{.N = 5, .K = 7}, SoftmaxXentParams{.N = 1, .K = 2},
          SoftmaxXentParams{.N = 3, .K = 1}}) {
        const VecD logits =
            test::to_double(test::uniform_floats(p.N * p.K, -3, 3, test::test_seed(), 1));
        std::vector<int64_t> labels;
        for (int64_t n = 0; n < p.N; ++n) labels.push_back((3 * n + 1) % p.K);
        VecD m(p.N), s(p.N), rows(p.N), dl(p.N * p.K);
        double loss = 0;
        const double dloss = 0.7;
        ref::softmax_xent_forward(logits.data(), labels.data(), m.data(), s.data(), rows.data(),
                                  &loss, p);
        ref::softmax_xent_backward(logits.data(), labels.data(), m.data(), s.data(), dloss,
                                   dl.data(), p);
        auto f = [&](const VecD& l) {
            VecD mm(p.N), ss(p.N), rr(p.N);
            double out = 0;
            ref::softmax_xent_forward(l.data(), labels.data(), mm.data(), ss.data(), rr.data(),
                                      &out, p);
            return VecD{out};
        };
        EXPECT_TRUE(test::gradcheck(f, logits, {dloss}, dl)) << "N=" << p.N << " K=" << p.K;
    }
}

}  // namespace
}  // namespace dt::kernels
