// SPDX-License-Identifier: MIT
#include "models/gpt.h"

#include "engine/autograd/tape.h"
#include "engine/ops/add.h"
#include "engine/ops/attention.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gelu.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/linear.h"
#include "engine/ops/shape_ops.h"

namespace dt {

namespace {

// A table of `rows` embeddings of `c` features (fan-in rows: one-hot inputs, fan-out c).
Tensor add_table(const ParamAdder& add, const std::string& name, int64_t rows, int64_t c) {
    return add(NamedParam{name, Tensor::zeros({rows, c}), ParamRole::kWeight, true, rows, c});
}

void check_gpt_config(const ModelConfig& c) {
    DT_CHECK_VALUE(c.layers >= 1 && c.layers <= 256, "gpt: --layers ", c.layers,
                   " is out of range (expected 1 to 256, e.g. 4)");
    DT_CHECK_VALUE(c.heads >= 1 && c.embed >= 1 && c.embed <= 65536 && c.embed % c.heads == 0,
                   "gpt: --width ", c.embed, " and --heads ", c.heads,
                   " do not fit (expected a width of 1 to 65536 that --heads divides, e.g. "
                   "--width 128 --heads 4)");
    DT_CHECK_VALUE(c.context >= 1 && c.context <= 65536, "gpt: --context ", c.context,
                   " is out of range (expected 1 to 65536 bytes, e.g. 128)");
}

}  // namespace

LayerNorm::LayerNorm(const ParamAdder& add, const std::string& name, int channels) {
    const int64_t c = channels;
    gamma = add(NamedParam{name + ".weight", Tensor::full({c}, 1.0f), ParamRole::kBnGamma, true});
    beta = add(NamedParam{name + ".bias", Tensor::zeros({c}), ParamRole::kBnBeta, true});
}

Tensor LayerNorm::forward(const Tensor& x, int64_t seq_len) const {
    return layer_norm(x, gamma, beta, seq_len);
}

GPT::GPT(const ModelConfig& cfg) : Model("gpt"), cfg_(cfg) {
    check_gpt_config(cfg);
    ParamAdder add = [this](NamedParam p) { return add_param(std::move(p)); };
    const int C = cfg.embed;
    wte_ = add_table(add, "wte.weight", kGptVocab, C);
    wpe_ = add_table(add, "wpe.weight", cfg.context, C);
    blocks_.resize(static_cast<std::size_t>(cfg.layers));
    for (int i = 0; i < cfg.layers; ++i) {
        const std::string p = "h." + std::to_string(i) + ".";
        Block& b = blocks_[static_cast<std::size_t>(i)];
        b.ln_1 = LayerNorm(add, p + "ln_1", C);
        b.qkv = Linear(add, p + "attn.qkv", C, 3 * C);
        b.proj = Linear(add, p + "attn.proj", C, C);
        b.ln_2 = LayerNorm(add, p + "ln_2", C);
        b.fc = Linear(add, p + "mlp.fc", C, 4 * C);
        b.mlp_proj = Linear(add, p + "mlp.proj", 4 * C, C);
    }
    ln_f_ = LayerNorm(add, "ln_f", C);
}

Tensor GPT::run(const Tensor& ids, int64_t first, const Attend& attend) {
    const int64_t B = ids.dim(0), T = ids.dim(1);
    const int64_t C = cfg_.embed, M = B * T;
    std::vector<int64_t> positions(static_cast<std::size_t>(M));
    for (int64_t m = 0; m < M; ++m) positions[static_cast<std::size_t>(m)] = first + m % T;
    const Tensor pos_ids = Tensor::from_vector_i64({B, T}, positions);
    // (B, T, C) each, as (M, C): token m = b*T + t.
    Tensor x = reshape(add(embedding(ids, wte_, T), embedding(pos_ids, wpe_, T)), {M, C});
    for (std::size_t l = 0; l < blocks_.size(); ++l) {
        const Block& b = blocks_[l];
        const Tensor att = attend(l, b.qkv.forward(b.ln_1.forward(x, T)));  // (M, C)
        x = add(x, b.proj.forward(att));
        x = add(x, b.mlp_proj.forward(gelu(b.fc.forward(b.ln_2.forward(x, T)))));
    }
    return linear(ln_f_.forward(x, T), wte_, Tensor());  // the tied head, no bias
}

Tensor GPT::forward(const Tensor& tokens, const ForwardContext& /*ctx: no dropout*/) {
    const int64_t C = cfg_.embed;
    DT_CHECK_SHAPE(tokens.defined() && tokens.ndim() == 2 && tokens.dim(0) >= 1 &&
                       tokens.dim(1) >= 1 && tokens.dim(1) <= cfg_.context,
                   "gpt: tokens must be (B, T) int64 with T at most --context ", cfg_.context,
                   ", got ", tokens.defined() ? tokens.str() : std::string("undefined"));
    const int64_t B = tokens.dim(0), T = tokens.dim(1);
    return run(tokens, 0, [&](std::size_t, const Tensor& qkv) {
        return reshape(causal_attention(reshape(qkv, {B, T, 3 * C}), cfg_.heads), {B * T, C});
    });
}

GptCache GPT::new_cache() const {
    GptCache c;
    for (std::size_t i = 0; i < blocks_.size(); ++i)
        c.qkv.push_back(
            Tensor::zeros({cfg_.context, 3 * int64_t{cfg_.embed}}, DType::kF32, device()));
    return c;
}

Tensor GPT::forward_cached(const std::vector<int64_t>& tokens, GptCache& cache) {
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t C = cfg_.embed, T = cfg_.context, t0 = cache.length, t1 = t0 + n;
    DT_CHECK_VALUE(n >= 1 && t1 <= T && cache.qkv.size() == blocks_.size(), "gpt: ", n,
                   " new tokens after ", t0, " cached ones do not fit the context of ", T,
                   " (hint: start a new cache from the last tokens)");
    autograd::NoGradGuard no_grad;
    const Tensor ids = Tensor::from_vector_i64({1, n}, tokens);
    const Tensor logits = run(ids, t0, [&](std::size_t l, const Tensor& qkv) {
        write_rows(cache.qkv[l], t0, qkv);
        const Tensor all = cache.qkv[l].view({1, T, 3 * C});
        return reshape(causal_attention_rows(all, cfg_.heads, t0, t1), {n, C});
    });
    cache.length = t1;
    return logits;
}

}  // namespace dt
