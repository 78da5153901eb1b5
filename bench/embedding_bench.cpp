// SPDX-License-Identifier: MIT
// Cost of the embedding kernels on the CPU at the GPT model's shape: B = 32 sequences of T = 256
// byte tokens, vocabulary V = 256, C = 192 features. The backward (site embed.grad) runs in every
// mode for the token table (ids skewed like text: id = floor(256 u^3), a few rows take most) and
// for learned positions (V = T, ids = t: every row hit once per sequence). Per mode, every
// iteration times one atomic call and one call of the mode; vs_atomic = fastest mode call /
// fastest atomic call (bench_util.h's timed_loop). Wall-clock time, OpenMP default threads.
// The forward, a gather of M = B * T rows, is timed once per table.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/embedding.h"

namespace {

namespace k = dt::kernels;
using k::common::AccumMode;

constexpr int64_t kB = 32, kT = 256, kV = 256, kC = 192;

enum class Ids { kTokens, kPositions };

k::EmbeddingParams params(Ids ids) {
    return k::EmbeddingParams{.V = ids == Ids::kTokens ? kV : kT, .C = kC, .M = kB * kT, .T = kT};
}

std::vector<int64_t> make_ids(Ids kind) {
    std::vector<int64_t> ids(static_cast<std::size_t>(kB * kT));
    const std::vector<float> u = dt::bench::uniform(kB * kT, 7);  // [-1, 1)
    for (int64_t m = 0; m < kB * kT; ++m) {
        const double x = (static_cast<double>(u[m]) + 1.0) / 2.0;
        ids[m] = kind == Ids::kPositions ? m % kT : static_cast<int64_t>(kV * x * x * x);
    }
    return ids;
}

void backward(benchmark::State& state, Ids kind, AccumMode mode) {
    k::EmbeddingParams p = params(kind);
    const std::vector<int64_t> ids = make_ids(kind);
    const std::vector<float> dy = dt::bench::uniform(p.M * p.C, 3);
    std::vector<float> dtable(static_cast<std::size_t>(p.V * p.C));
    dt::bench::timed_loop(state, mode, [&](AccumMode m) {
        p.accum = k::common::accum_spec(m, 99);
        k::cpu::embedding_backward(ids.data(), dy.data(), dtable.data(), p);
    });
    state.SetBytesProcessed(state.iterations() * p.M * p.C * 4);
}

void forward(benchmark::State& state, Ids kind) {
    const k::EmbeddingParams p = params(kind);
    const std::vector<int64_t> ids = make_ids(kind);
    const std::vector<float> table = dt::bench::uniform(p.V * p.C, 4);
    std::vector<float> y(static_cast<std::size_t>(p.M * p.C));
    for (auto _ : state) {
        k::cpu::embedding_forward(ids.data(), table.data(), y.data(), p);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * p.M * p.C * 8);
}

const bool registered = [] {
    for (const auto& [name, kind] :
         {std::pair{"tokens", Ids::kTokens}, std::pair{"positions", Ids::kPositions}}) {
        const std::string base = std::string("embedding_") + name;
        benchmark::RegisterBenchmark((base + "_forward").c_str(), forward, kind)
            ->Unit(benchmark::kMicrosecond);
        for (AccumMode m : dt::bench::kAllModes)
            benchmark::RegisterBenchmark((base + "_backward/" + dt::bench::mode_name(m)).c_str(),
                                         backward, kind, m)
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
    }
    return true;
}();

}  // namespace
