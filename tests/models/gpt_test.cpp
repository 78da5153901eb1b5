// SPDX-License-Identifier: MIT
// GPT (models/gpt.h): parameter names, shapes and count, the logits' shape, causality (a token
// changes no logit of an earlier position) and sequence independence (nor of another sequence),
// the tied head's table gradient (head's + embedding's), every parameter reached by the backward,
// and config validation.
#include "models/gpt.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/ops/softmax_xent.h"
#include "tests/support/models.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

ModelConfig gpt_config(int layers, int heads, int embed, int64_t context) {
    ModelConfig c;
    c.name = "gpt";
    c.layers = layers, c.heads = heads, c.embed = embed, c.context = context;
    return c;
}

/// B sequences of T tokens keyed by seed.
std::vector<int64_t> random_tokens(int64_t B, int64_t T, uint64_t seed) {
    const std::vector<float> u = test::uniform_floats(B * T, 0.0f, 256.0f, seed, 1);
    std::vector<int64_t> t(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) t[i] = static_cast<int64_t>(u[i]) % 256;
    return t;
}

std::unique_ptr<GPT> tiny_gpt(uint64_t seed = 5) { return test::gpt_model(2, 2, 16, 8, seed); }

TEST(GPT, ParamNamesShapesAndCount) {
    const auto m = make_model(gpt_config(4, 4, 128, 128));
    EXPECT_EQ(m->name(), "gpt");
    const std::vector<NamedParam>& p = m->params();
    ASSERT_EQ(p.size(), 2u + 4u * 12u + 2u);
    EXPECT_EQ(p[0].name, "wte.weight");
    EXPECT_EQ(p[0].tensor.shape(), (Shape{256, 128}));
    EXPECT_EQ(p[1].name, "wpe.weight");
    EXPECT_EQ(p[1].tensor.shape(), (Shape{128, 128}));
    const std::vector<std::string> block = {"ln_1.weight",   "ln_1.bias",        "attn.qkv.weight",
                                            "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                                            "ln_2.weight",   "ln_2.bias",        "mlp.fc.weight",
                                            "mlp.fc.bias",   "mlp.proj.weight",  "mlp.proj.bias"};
    for (std::size_t i = 0; i < block.size(); ++i) EXPECT_EQ(p[2 + 12 + i].name, "h.1." + block[i]);
    EXPECT_EQ(p[2 + 12 + 2].tensor.shape(), (Shape{384, 128}));   // h.1.attn.qkv.weight
    EXPECT_EQ(p[2 + 12 + 10].tensor.shape(), (Shape{128, 512}));  // h.1.mlp.proj.weight
    EXPECT_EQ(p[p.size() - 2].name, "ln_f.weight");
    EXPECT_EQ(p.back().name, "ln_f.bias");
    const int64_t C = 128, T = 128, L = 4;
    EXPECT_EQ(m->num_trainable(), 256 * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
    EXPECT_EQ(m->num_trainable(), 842496);
    EXPECT_EQ(m->rows_per_sample(), 128);
}

TEST(GPT, LogitsAreCausalAndPerSequence) {
    auto m = tiny_gpt();
    const int64_t B = 3, T = 8;
    std::vector<int64_t> tokens = random_tokens(B, T, 7);
    autograd::NoGradGuard no_grad;
    const Tensor a = m->forward(Tensor::from_vector_i64({B, T}, tokens), ForwardContext{});
    ASSERT_EQ(a.shape(), (Shape{B * T, 256}));
    tokens[1 * T + 5] = (tokens[1 * T + 5] + 1) % 256;  // sequence 1, position 5
    const Tensor b = m->forward(Tensor::from_vector_i64({B, T}, tokens), ForwardContext{});
    const std::vector<float> va = a.to_vector(), vb = b.to_vector();
    for (int64_t row = 0; row < B * T; ++row) {
        const bool may_change = row / T == 1 && row % T >= 5;
        bool same = true;
        for (int64_t k = 0; k < 256; ++k) same = same && va[row * 256 + k] == vb[row * 256 + k];
        if (may_change)
            EXPECT_FALSE(same) << "row " << row << " does not see the changed token";
        else
            EXPECT_TRUE(same) << "row " << row << " changed: not causal or not per sequence";
    }
}

TEST(GPT, BackwardReachesEveryParameterAndTheTableTwice) {
    auto m = tiny_gpt();
    const int64_t B = 2, T = 8;
    const std::vector<int64_t> targets = random_tokens(B, T, 9);
    Tensor loss = softmax_cross_entropy(
        m->forward(Tensor::from_vector_i64({B, T}, random_tokens(B, T, 8)), ForwardContext{}),
        Tensor::from_vector_i64({B * T}, targets));
    loss.backward();
    for (const NamedParam& p : m->params()) {
        const Tensor g = p.tensor.grad();
        ASSERT_TRUE(g.defined()) << p.name;
        double norm = 0;
        for (float v : g.to_vector()) norm += v < 0 ? -v : v;
        EXPECT_GT(norm, 0.0) << p.name;
    }
    // Rows of wte that are never an input token get the head's gradient only; every row gets
    // one from the head (every logit is a term of the softmax).
    const std::vector<float> g = m->params()[0].tensor.grad().to_vector();
    for (int64_t v = 0; v < 256; ++v) {
        double row = 0;
        for (int64_t c = 0; c < 16; ++c) row += g[v * 16 + c] < 0 ? -g[v * 16 + c] : g[v * 16 + c];
        EXPECT_GT(row, 0.0) << "wte row " << v << " got no gradient from the tied head";
    }
}

TEST(GPT, BadSizesAreRefused) {
    EXPECT_THROW(make_model(gpt_config(0, 2, 16, 8)), ValueError);
    EXPECT_THROW(make_model(gpt_config(2, 3, 16, 8)), ValueError);  // 3 does not divide 16
    EXPECT_THROW(make_model(gpt_config(2, 2, 16, 0)), ValueError);
    auto m = tiny_gpt();
    EXPECT_THROW(
        m->forward(Tensor::from_vector_i64({1, 9}, std::vector<int64_t>(9, 1)), ForwardContext{}),
        ShapeError);
}

}  // namespace
}  // namespace dt
