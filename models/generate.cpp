// SPDX-License-Identifier: MIT
// Generation (contract in generate.h): prompt step, then a step per byte; logits come to the
// host, where the byte is chosen and its log-probability taken.
#include "models/generate.h"

#include <cmath>

#include "engine/core/error.h"
#include "kernels/common/fast_math.h"
#include "kernels/common/philox.h"

namespace dt {

double token_log_prob(const float* row, int64_t K, int64_t k) {
    double mx = row[0];
    for (int64_t j = 1; j < K; ++j) mx = std::max(mx, static_cast<double>(row[j]));
    double sum = 0;
    for (int64_t j = 0; j < K; ++j) sum += std::exp(static_cast<double>(row[j]) - mx);
    return static_cast<double>(row[k]) - mx - std::log(sum);
}

int64_t choose_token(const float* row, int64_t K, double temperature, uint64_t seed,
                     uint64_t position) {
    namespace c = kernels::common;
    DT_CHECK_VALUE(std::isfinite(temperature) && temperature >= 0, "generate: temperature ",
                   temperature, " (expected 0 for greedy, or a positive number such as 0.8)");
    int64_t best = 0;
    for (int64_t j = 1; j < K; ++j)
        if (row[j] > row[best]) best = j;  // the first largest
    if (temperature == 0) return best;
    const auto t = static_cast<float>(temperature);
    const float m = row[best] / t;  // division is monotonic: the max of z is z_best
    std::vector<float> cum(static_cast<std::size_t>(K));
    float total = 0.0f;
    int64_t last = best;
    for (int64_t j = 0; j < K; ++j) {  // ORDER: index order from +0
        const float w = c::dt_expf(row[j] / t - m);
        if (w > 0.0f) last = j;
        total = total + w;
        cum[static_cast<std::size_t>(j)] = total;
    }
    const c::Philox4 r = c::philox_draw(seed, c::RngStream::kGenerate, position, 0);
    const float u = c::uniform01(r.v[0]) * total;
    for (int64_t j = 0; j < K; ++j)
        if (cum[static_cast<std::size_t>(j)] > u) return j;
    return last;
}

Generation generate(GPT& model, std::vector<int64_t> prompt, const GenerateOptions& opts) {
    const int64_t T = model.config().context, K = kGptVocab;
    DT_CHECK_VALUE(!prompt.empty(), "generate: the prompt is empty (hint: give at least one byte)");
    DT_CHECK_VALUE(opts.tokens >= 0, "generate: --tokens ", opts.tokens, " (expected >= 0)");
    if (static_cast<int64_t>(prompt.size()) > T) prompt.erase(prompt.begin(), prompt.end() - T);
    Generation g;
    std::vector<int64_t> text = prompt;  // every byte so far
    GptCache cache = model.new_cache();
    Tensor logits = model.forward_cached(prompt, cache);
    for (int64_t i = 0; i < opts.tokens; ++i) {
        const std::vector<float> rows = logits.to_vector();
        const float* row = rows.data() + (logits.dim(0) - 1) * K;  // the last token's
        const auto position = static_cast<uint64_t>(text.size());
        const int64_t next = choose_token(row, K, opts.temperature, opts.seed, position);
        g.tokens.push_back(next);
        g.log_probs.push_back(token_log_prob(row, K, next));
        text.push_back(next);
        if (i + 1 == opts.tokens) break;
        if (cache.length == T) {  // full: start again from the last half
            cache = model.new_cache();
            logits = model.forward_cached({text.end() - T / 2, text.end()}, cache);
            ++g.restarts;
        } else {
            logits = model.forward_cached({next}, cache);
        }
    }
    return g;
}

}  // namespace dt
