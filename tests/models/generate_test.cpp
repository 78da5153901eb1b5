// SPDX-License-Identifier: MIT
// Generation (models/generate.h): a seed gives the same continuation and another seed another;
// temperature 0 takes the largest logit; the sampler's log-probabilities equal those a training
// forward of the whole text gives its bytes (tree, kahan, exact: the KV cache's logits are the
// forward's); generation goes on past the context by restarting the cache.
#include "models/generate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "tests/support/models.h"

namespace dt {
namespace {

using kernels::common::accum_spec;
using kernels::common::AccumMode;

std::unique_ptr<GPT> tiny_gpt(int64_t context = 48) {
    return test::gpt_model(2, 2, 16, context, 9);
}

const std::vector<int64_t> kPrompt = {'T', 'h', 'e', ' '};

TEST(Generate, TheSeedDecidesTheContinuation) {
    auto m = tiny_gpt();
    const Generation a = generate(*m, kPrompt, {30, 1.0, 5});
    const Generation b = generate(*m, kPrompt, {30, 1.0, 5});
    const Generation c = generate(*m, kPrompt, {30, 1.0, 6});
    ASSERT_EQ(a.tokens.size(), 30u);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.log_probs, b.log_probs);
    EXPECT_NE(a.tokens, c.tokens);
    for (double lp : a.log_probs) EXPECT_TRUE(std::isfinite(lp) && lp <= 0) << lp;
}

TEST(Generate, TemperatureZeroTakesTheLargestLogit) {
    std::vector<float> row(256, 0.0f);
    row[65] = 3.0f, row[66] = 3.0f;  // ties: the first
    EXPECT_EQ(choose_token(row.data(), 256, 0.0, 1, 0), 65);
    auto m = tiny_gpt();
    const Generation g = generate(*m, kPrompt, {10, 0.0, 0});
    std::vector<int64_t> text = kPrompt;
    for (std::size_t i = 0; i < g.tokens.size(); ++i) {
        autograd::NoGradGuard no_grad;
        const auto T = static_cast<int64_t>(text.size());
        const std::vector<float> logits =
            m->forward(Tensor::from_vector_i64({1, T}, text), ForwardContext{}).to_vector();
        const float* last = logits.data() + (T - 1) * 256;
        EXPECT_EQ(g.tokens[i], choose_token(last, 256, 0.0, 0, 0)) << i;
        text.push_back(g.tokens[i]);
    }
    EXPECT_THROW(choose_token(row.data(), 256, -1.0, 1, 0), ValueError);
}

TEST(Generate, TheSamplersLogProbsAreTheTrainingForwards) {
    auto m = tiny_gpt();
    for (AccumMode mode : {AccumMode::kTree, AccumMode::kKahan, AccumMode::kExact}) {
        SCOPED_TRACE(static_cast<int>(mode));
        const ScopedReduceConfig config(accum_spec(mode));
        const Generation g = generate(*m, kPrompt, {40, 0.9, 3});
        std::vector<int64_t> text = kPrompt;
        text.insert(text.end(), g.tokens.begin(), g.tokens.end());
        autograd::NoGradGuard no_grad;
        const auto T = static_cast<int64_t>(text.size()) - 1;  // the last byte predicts nothing
        const std::vector<float> logits =
            m->forward(Tensor::from_vector_i64({1, T}, {text.begin(), text.end() - 1}),
                       ForwardContext{})
                .to_vector();
        for (std::size_t i = 0; i < g.tokens.size(); ++i) {
            const int64_t row = static_cast<int64_t>(kPrompt.size() + i) - 1;
            EXPECT_EQ(token_log_prob(logits.data() + row * 256, 256, g.tokens[i]), g.log_probs[i])
                << "byte " << i;
        }
    }
}

TEST(Generate, PastTheContextTheCacheRestarts) {
    auto m = tiny_gpt(16);
    const Generation g = generate(*m, kPrompt, {40, 1.0, 2});
    EXPECT_EQ(g.tokens.size(), 40u);
    EXPECT_GE(g.restarts, 2);
    // A prompt longer than the context keeps its tail.
    EXPECT_EQ(generate(*m, std::vector<int64_t>(30, 'a'), {3, 0.0, 0}).tokens.size(), 3u);
    EXPECT_THROW(generate(*m, {}, {3, 0.0, 0}), ValueError);
}

}  // namespace
}  // namespace dt
