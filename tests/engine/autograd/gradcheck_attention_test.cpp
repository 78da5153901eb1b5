// SPDX-License-Identifier: MIT
// Reference causal self-attention backward (kernels/ref/attention_ref.h) vs central differences
// of the reference forward: the gradient of qkv (queries, keys and values) for a random dout.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/ref/attention_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

TEST(GradcheckAttention, Qkv) {
    for (const AttentionParams p : {AttentionParams{.B = 2, .T = 5, .H = 2, .D = 3},
                                    AttentionParams{.B = 1, .T = 1, .H = 1, .D = 2},
                                    AttentionParams{.B = 1, .T = 4, .H = 1, .D = 1}}) {
        const int64_t C = p.H * p.D;
        const std::vector<double> qkv =
            test::to_double(test::uniform_floats(p.B * p.T * 3 * C, -2, 2, test::test_seed(), 1));
        const std::vector<double> dout =
            test::to_double(test::uniform_floats(p.B * p.T * C, -1, 1, test::test_seed(), 2));
        std::vector<double> dqkv(qkv.size());
        ref::attention_backward(qkv.data(), dout.data(), dqkv.data(), p);
        auto f = [&](const std::vector<double>& x) {
            std::vector<double> out(dout.size()), m(static_cast<std::size_t>(p.B * p.H * p.T)),
                l(m.size());
            ref::attention_forward(x.data(), out.data(), m.data(), l.data(), p);
            return out;
        };
        EXPECT_TRUE(test::gradcheck(f, qkv, dout, dqkv)) << "T=" << p.T << " D=" << p.D;
    }
}

}  // namespace
}  // namespace dt::kernels
