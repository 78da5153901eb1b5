// SPDX-License-Identifier: MIT
// Reference embedding backward (embed.grad: the scatter-add into the table) vs central
// differences in double, with repeated ids, unused rows and positions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/ref/embedding_ref.h"
#include "tests/support/gradcheck.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

TEST(GradcheckEmbedding, ReferenceBackward) {
    struct Case {
        EmbeddingParams p;
        std::vector<int64_t> ids;
    };
    const Case cases[] = {{{.V = 1, .C = 1, .M = 1, .T = 1}, {0}},
                          {{.V = 5, .C = 3, .M = 6, .T = 3}, {4, 0, 4, 4, 1, 0}},  // 2, 3 unused
                          {{.V = 4, .C = 2, .M = 8, .T = 4}, {0, 1, 2, 3, 0, 1, 2, 3}}};
    for (const Case& k : cases) {
        const EmbeddingParams& p = k.p;
        SCOPED_TRACE("V=" + std::to_string(p.V) + " C=" + std::to_string(p.C) +
                     " M=" + std::to_string(p.M));
        const uint64_t seed = test::test_seed();
        const auto table = test::to_double(test::uniform_floats(p.V * p.C, -1, 1, seed, 1));
        const auto dy = test::to_double(test::uniform_floats(p.M * p.C, -1, 1, seed, 2));
        std::vector<double> dtable(table.size());
        ref::embedding_backward(k.ids.data(), dy.data(), dtable.data(), p);
        auto fwd = [&](const std::vector<double>& t) {
            std::vector<double> y(dy.size());
            ref::embedding_forward(k.ids.data(), t.data(), y.data(), p);
            return y;
        };
        EXPECT_TRUE(test::gradcheck(fwd, table, dy, dtable)) << "dtable";
    }
}

}  // namespace
}  // namespace dt::kernels
