// SPDX-License-Identifier: MIT
// dt::embedding through autograd: y of shape ids + [C] holds the table's rows bit for bit; the
// table's gradient equals the embed.grad kernel in every mode (the site's spec reaches it) and
// the double reference within its bound; tokens and positions together (two tables, one sum);
// micro-batches in the exact mode give the whole batch's gradient bits; bad ids, shapes and
// seq_len throw errors that name the values and say what to pass.
#include "engine/ops/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/add.h"
#include "engine/runtime/batch_split.h"
#include "engine/runtime/collective.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/embedding.h"
#include "kernels/ref/embedding_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

constexpr int64_t B = 5, T = 11, V = 40, C = 6;

std::vector<int64_t> tokens() {  // skewed: a few ids take most rows, some none
    std::vector<int64_t> ids;
    for (float u : test::uniform_floats(B * T, 0, 1, test::test_seed(), 1))
        ids.push_back(static_cast<int64_t>(static_cast<float>(V) * u * u * u));
    return ids;
}

TEST(EmbeddingOp, ForwardGathersAndBackwardIsTheSitesKernelInEveryMode) {
    const std::vector<int64_t> ids = tokens();
    const auto tv = test::uniform_floats(V * C, -1, 1, test::test_seed(), 2);
    const auto dyv = test::uniform_floats(B * T * C, -1, 1, test::test_seed(), 3);
    for (const AccumSpec& spec : test::all_mode_specs(17)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const ScopedReduceConfig modes(spec);
        Tensor table = Tensor::from_vector({V, C}, tv);
        table.set_requires_grad(true);
        const Tensor y = embedding(Tensor::from_vector_i64({B, T}, ids), table, T);
        ASSERT_EQ(y.shape(), (Shape{B, T, C}));
        for (int64_t m = 0; m < B * T; ++m)
            for (int64_t c = 0; c < C; ++c)
                ASSERT_EQ(test::bits(y.f32()[m * C + c]), test::bits(tv[ids[m] * C + c]));
        test::weighted_sum(y, dyv).backward();
        // The kernel with the spec of the site's first call (permuted: its call-0 key).
        kernels::EmbeddingParams p{.V = V, .C = C, .M = B * T, .T = T};
        p.accum = spec;
        if (spec.mode == AccumMode::kPermuted)
            p.accum.permute_key =
                kernels::common::permute_key(17, static_cast<uint32_t>(ReduceSite::kEmbedGrad), 0);
        std::vector<float> want(static_cast<std::size_t>(V * C));
        kernels::cpu::embedding_backward(ids.data(), dyv.data(), want.data(), p);
        if (spec.mode != AccumMode::kAtomic) {
            EXPECT_TRUE(test::bitwise_equal(table.grad().f32(), want.data(), V * C));
        }
        std::vector<double> dyd = test::to_double(dyv), ref(want.size()), mag(want.size()),
                            bound(want.size());
        kernels::ref::embedding_backward(ids.data(), dyd.data(), ref.data(), p);
        for (double& v : dyd) v = std::fabs(v);
        kernels::ref::embedding_backward(ids.data(), dyd.data(), mag.data(), p);
        for (std::size_t i = 0; i < bound.size(); ++i)
            bound[i] = static_cast<double>(B * T + 2) * test::kEps32 * mag[i];
        EXPECT_TRUE(test::within_bound(table.grad().f32(), ref.data(), bound.data(), V * C));
    }
}

TEST(EmbeddingOp, TokensAndPositionsShareOneSum) {
    // x = tok[tokens] + pos[t] (learned positions): each table gets its own embed.grad.
    const std::vector<int64_t> ids = tokens();
    std::vector<int64_t> pos;
    for (int64_t m = 0; m < B * T; ++m) pos.push_back(m % T);
    Tensor tok = test::random_param({V, C}, 5, 1), pe = test::random_param({T, C}, 5, 2);
    const auto dyv = test::uniform_floats(B * T * C, -1, 1, test::test_seed(), 4);
    const Tensor x = add(embedding(Tensor::from_vector_i64({B, T}, ids), tok, T),
                         embedding(Tensor::from_vector_i64({B, T}, pos), pe, T));
    test::weighted_sum(x, dyv).backward();
    const kernels::EmbeddingParams pt{.V = V, .C = C, .M = B * T, .T = T};
    const kernels::EmbeddingParams pp{.V = T, .C = C, .M = B * T, .T = T};
    std::vector<float> want_tok(static_cast<std::size_t>(V * C)), want_pos(T * C);
    kernels::cpu::embedding_backward(ids.data(), dyv.data(), want_tok.data(), pt);
    kernels::cpu::embedding_backward(pos.data(), dyv.data(), want_pos.data(), pp);
    EXPECT_TRUE(test::bitwise_equal(tok.grad().f32(), want_tok.data(), V * C));
    EXPECT_TRUE(test::bitwise_equal(pe.grad().f32(), want_pos.data(), T * C));
    // Positions: every row is hit once per sequence, so its tree is over B leaves of one row.
    for (int64_t c = 0; c < C; ++c) {
        std::vector<float> leaves;
        for (int64_t b = 0; b < B; ++b) leaves.push_back(dyv[(b * T + 3) * C + c]);
        EXPECT_EQ(test::bits(pe.grad().f32()[3 * C + c]),
                  test::bits(kernels::common::reduce_tree_combine(leaves.data(), B)));
    }
}

TEST(EmbeddingOp, MicroBatchesGiveTheWholeBatchsExactGradient) {
    // embed.grad exact through a split batch (engine/runtime/batch_split.h): two micro-batches'
    // unrounded sums in the table's accumulators, rounded once at finish: the whole batch's bits.
    const ScopedReduceConfig exact(kernels::common::accum_spec(AccumMode::kExact));
    const std::vector<int64_t> ids = tokens();
    const auto tv = test::uniform_floats(V * C, -1, 1, test::test_seed(), 6);
    const auto dyv = test::uniform_floats(B * T * C, -1, 1, test::test_seed(), 7);
    Tensor whole = Tensor::from_vector({V, C}, tv), split_table = whole.clone();
    whole.set_requires_grad(true);
    split_table.set_requires_grad(true);
    test::weighted_sum(embedding(Tensor::from_vector_i64({B, T}, ids), whole, T), dyv).backward();
    BatchSplit split({split_table}, world(), false);
    split.begin_step(B);
    for (const auto& [b0, b1] : {std::pair<int64_t, int64_t>{0, 2}, {2, B}}) {
        split.begin_micro(b1 - b0);
        const ScopedBatchSplit scoped(split);
        const Tensor part = Tensor::from_vector_i64(
            {b1 - b0, T}, std::vector<int64_t>(ids.begin() + b0 * T, ids.begin() + b1 * T));
        test::weighted_sum(embedding(part, split_table, T),
                           std::vector<float>(dyv.begin() + b0 * T * C, dyv.begin() + b1 * T * C))
            .backward();
        EXPECT_FALSE(split_table.grad().defined()) << "the part's sums went to a float gradient";
    }
    split.finish(kernels::common::accum_spec(AccumMode::kExact));
    EXPECT_TRUE(test::bitwise_equal(split_table.grad().to_vector(), whole.grad().to_vector()));
}

TEST(EmbeddingOp, RejectsBadArguments) {
    const Tensor table = Tensor::zeros({4, 3});
    const Tensor ids = Tensor::from_vector_i64({2, 3}, {0, 1, 2, 3, 2, 1});
    EXPECT_EQ(embedding(ids, table, 3).shape(), (Shape{2, 3, 3}));
    std::string msg = test::message_of<ValueError>([&] {
        embedding(Tensor::from_vector_i64({2, 3}, {0, 1, 4, 3, 2, 1}), table, 3);
    });
    EXPECT_TRUE(test::has(msg, "ids[2] = 4 is outside [0, 4)"));
    EXPECT_TRUE(test::has(msg, "has 4 rows"));
    EXPECT_TRUE(test::has(test::message_of<ValueError>(
                              [&] { embedding(Tensor::from_vector_i64({1}, {-1}), table, 1); }),
                          "ids[0] = -1"));
    msg = test::message_of<ShapeError>([&] { embedding(ids, table, 4); });
    EXPECT_TRUE(test::has(msg, "seq_len = 4"));
    EXPECT_TRUE(test::has(msg, "multiple of seq_len"));
    EXPECT_TRUE(
        test::has(test::message_of<ValueError>([&] { embedding(ids, table, 0); }), "seq_len is 0"));
    EXPECT_TRUE(test::has(test::message_of<DTypeError>([&] {
                              embedding(Tensor::zeros({2, 3}), table, 3);
                          }),
                          "ids must be int64"));
    EXPECT_THROW(embedding(ids, Tensor::zeros({12}), 3), ShapeError);
    EXPECT_THROW(embedding(ids, Tensor::zeros({4, 3}, DType::kI64), 3), DTypeError);
}

}  // namespace
}  // namespace dt
