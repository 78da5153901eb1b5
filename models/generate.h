// SPDX-License-Identifier: MIT
// Text generation with GPT's KV cache (models/gpt.h): a prompt, then one token at a time, each
// step's logits the training forward's bits for the same prefix.
//
// Choosing the next byte from a logits row (K = 256 floats):
//   temperature 0: the first largest logit (greedy);
//   temperature > 0: ORDER: z_k = l_k / temperature (float), m = the first max of z,
//   w_k = dt_expf(z_k - m) (kernels/common/fast_math.h), c_k = +0 + w_0 + ... + w_k in index
//   order (float); u = uniform01(philox_draw(seed, kGenerate, index = position of the new
//   token, sub = 0).v[0]) * c_{K-1}; the byte is the first k with c_k > u (the last k with
//   w_k > 0 when rounding leaves none). No libm: the same bytes on every machine and device.
// Log-probabilities: token_log_prob, in double, the formula of the evaluation's loss rows.
// Past the context, the cache restarts from the last context / 2 tokens (one prompt step), so
// every context / 2 tokens cost a recomputation of that half.
#pragma once
#include <cstdint>
#include <vector>

#include "models/gpt.h"

namespace dt {

struct GenerateOptions {
    int64_t tokens = 200;      // new bytes
    double temperature = 0.8;  // 0: greedy
    uint64_t seed = 0;         // the sampling stream's seed
};

struct Generation {
    std::vector<int64_t> tokens;    // the new bytes
    std::vector<double> log_probs;  // ln p of each new byte under its step's logits
    int64_t restarts = 0;           // cache restarts past the context
};

/// ln softmax(row)[k] in double: ORDER: the max, then the sum of exp(l - max) over the K
/// classes in index order, in double; ln p = l_k - max - ln(sum).
double token_log_prob(const float* row, int64_t K, int64_t k);

/// The byte a logits row gives at `position` (the recipe above). Throws ValueError for a
/// negative or non-finite temperature.
int64_t choose_token(const float* row, int64_t K, double temperature, uint64_t seed,
                     uint64_t position);

/// Continues `prompt` (bytes, at least one) by opts.tokens bytes. A prompt longer than the
/// context keeps its last context bytes.
Generation generate(GPT& model, std::vector<int64_t> prompt, const GenerateOptions& opts);

}  // namespace dt
