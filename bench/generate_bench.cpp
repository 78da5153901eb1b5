// SPDX-License-Identifier: MIT
// Generation's cost per new token: the default GPT (seed 0) after a prompt of 64 bytes, each
// iteration the next 64 tokens one at a time. BM_GenerateStep/kv_cache feeds each token to
// GPT::forward_cached (the KV cache: one query row per block and head); /recompute runs the
// training forward over the whole prefix for each token, as a model without a cache must.
// Both give the same logits bit for bit (tests/models/gpt_cache_test.cpp). Counter tokens/s.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "models/gpt.h"

namespace {

constexpr int64_t kPrompt = 64, kNew = 64;

void generate_step(benchmark::State& state, bool cached) {
    dt::ModelConfig mc;
    mc.name = "gpt";
    dt::GPT gpt(mc);  // the default sizes: 4 blocks, 4 heads, width 128, context 128
    gpt.init(dt::InitScheme::kGlorotUniform, 0);
    const dt::ScopedReduceConfig tree(dt::kernels::common::accum_spec(dt::AccumMode::kTree));
    const dt::autograd::NoGradGuard no_grad;
    std::vector<int64_t> tokens(static_cast<std::size_t>(kPrompt + kNew));
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(i * 37 % 256);
    const std::vector<int64_t> prompt(tokens.begin(), tokens.begin() + kPrompt);
    for (auto _ : state) {
        state.PauseTiming();
        dt::GptCache cache = gpt.new_cache();
        if (cached) gpt.forward_cached(prompt, cache);
        state.ResumeTiming();
        for (int64_t t = kPrompt; t < kPrompt + kNew; ++t) {
            if (cached) {
                benchmark::DoNotOptimize(
                    gpt.forward_cached({tokens[static_cast<std::size_t>(t)]}, cache));
            } else {
                const std::vector<int64_t> prefix(tokens.begin(), tokens.begin() + t + 1);
                benchmark::DoNotOptimize(
                    gpt.forward(dt::Tensor::from_vector_i64({1, t + 1}, prefix), {}));
            }
        }
    }
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(kNew),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(generate_step, kv_cache, true)
    ->Name("BM_GenerateStep/kv_cache")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(generate_step, recompute, false)
    ->Name("BM_GenerateStep/recompute")
    ->Unit(benchmark::kMillisecond);

}  // namespace
