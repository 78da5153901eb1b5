// SPDX-License-Identifier: MIT
// GPT, the reference language model (GPT-2's layout, byte-level): tokens (B, T) int64 in [0, 256)
//   x = wte[tokens] + wpe[t]                                    (B*T, C)
//   L x block:  x = x + proj(attention(qkv(ln_1(x))))           causal, `heads` heads
//               x = x + mlp.proj(gelu(mlp.fc(ln_2(x))))         hidden 4C
//   logits = ln_f(x) wte^T                                      (B*T, 256): the tied head
// Pre-LN blocks, learned positions, every linear layer with a bias but the head.
//
// Canonical order: wte.weight (256, C), wpe.weight (T, C), then per block h.<i>: ln_1.{weight,
// bias}, attn.qkv.{weight,bias} (3C, C), attn.proj.{weight,bias} (C, C), ln_2.{weight,bias},
// mlp.fc.{weight,bias} (4C, C), mlp.proj.{weight,bias} (C, 4C); last ln_f.{weight,bias}.
// Trainable: 256C + TC + L(12C^2 + 13C) + 2C; the default (L 4, C 128, T 128) has 842,496.
// Init (Model::init): the tables are weights with fan_in = rows (256 or T) and fan_out = C, so
// Glorot's bound is sqrt(6 / (rows + C)); layer-norm gains 1 and shifts 0, biases 0.
//
// The table wte gets two gradients in every step. ORDER: the tape runs the head's backward first
// (linear.wgrad: wte.grad = head's), then the embedding's (embed.grad: wte.grad = head's +
// embedding's, one float add per element). A split batch under exact keeps one set of exact
// accumulators per use and adds the two rounded sums the same way (engine/runtime/batch_split.h),
// so micro-batches and processes keep the whole batch's bits.
#pragma once
#include <functional>
#include <vector>

#include "models/layers.h"

namespace dt {

constexpr int64_t kGptVocab = 256;  // a token is a byte (datasets/text_corpus.h)

/// Layer normalisation over the features of every token, weight (gamma) and bias (beta) (C).
class LayerNorm {
 public:
    LayerNorm() = default;
    LayerNorm(const ParamAdder& add, const std::string& name, int channels);
    /// x (B*T, C) -> (B*T, C); seq_len = T.
    Tensor forward(const Tensor& x, int64_t seq_len) const;

    Tensor gamma, beta;
};

/// A KV cache of one sequence for GPT::forward_cached: per block, the qkv rows of the tokens
/// seen so far, in a buffer of `context` tokens on the model's device.
struct GptCache {
    int64_t length = 0;       // tokens cached
    std::vector<Tensor> qkv;  // per block: (context, 3C)
};

class GPT : public Model {
 public:
    /// Throws ValueError for sizes out of range (the message names the flag).
    explicit GPT(const ModelConfig& cfg);
    /// tokens (B, T) int64 with 1 <= T <= cfg.context -> logits (B*T, 256), row b*T + t for the
    /// prediction of the byte after token t of sequence b.
    Tensor forward(const Tensor& tokens, const ForwardContext& ctx) override;

    /// An empty cache for forward_cached, on the model's device.
    GptCache new_cache() const;
    /// Inference with a KV cache: the logits (n, 256) of n new tokens of one sequence, at
    /// positions cache.length .. cache.length + n - 1, which are then cached. Each row has the
    /// bits of forward()'s row for the same prefix (every op's row is its own: batch invariant),
    /// and a step costs the new tokens' work, attention over the cached keys included.
    /// ValueError past cfg.context tokens. No gradient.
    Tensor forward_cached(const std::vector<int64_t>& tokens, GptCache& cache);
    const ModelConfig& config() const { return cfg_; }
    int64_t rows_per_sample() const override { return cfg_.context; }
    bool ties_parameters() const override { return true; }  // wte: the embedding and the head

 private:
    /// Attention of block l from its qkv rows (M, 3C) -> (M, C).
    using Attend = std::function<Tensor(std::size_t l, const Tensor& qkv)>;
    /// The model on ids (B, T) at positions first .. first + T - 1, attention by `attend`: the
    /// one layout forward() and forward_cached() share.
    Tensor run(const Tensor& ids, int64_t first, const Attend& attend);

    struct Block {
        LayerNorm ln_1;
        Linear qkv, proj;
        LayerNorm ln_2;
        Linear fc, mlp_proj;
    };
    ModelConfig cfg_;
    Tensor wte_, wpe_;
    std::vector<Block> blocks_;
    LayerNorm ln_f_;
};

}  // namespace dt
