// SPDX-License-Identifier: MIT
// cpu causal self-attention (kernels/attention.h) at a small GPT's size: 8 sequences of 256
// tokens, 6 heads of 32. Forward and backward in every mode of their sites (attn.fwd, attn.grad),
// all threads. Counter tokens/s: B * T per call. Run e.g.
// `dt_bench --benchmark_filter=Attention --benchmark_min_time=0.5`.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/attention.h"

namespace {

using dt::bench::AccumMode;
namespace k = dt::kernels;

constexpr k::AttentionParams kShape{.B = 8, .T = 256, .H = 6, .D = 32};

void run_attention(benchmark::State& state, bool backward, AccumMode mode) {
    k::AttentionParams p = kShape;
    p.accum = k::common::accum_spec(mode, mode == AccumMode::kPermuted ? 7 : 0);
    const int64_t C = p.H * p.D, tokens = p.B * p.T;
    const std::vector<float> qkv = dt::bench::uniform(tokens * 3 * C, 1);
    const std::vector<float> dout = dt::bench::uniform(tokens * C, 2);
    std::vector<float> out(dout.size()), m(static_cast<std::size_t>(k::attention_rows(p))),
        l(m.size()), dqkv(qkv.size());
    k::cpu::attention_forward(qkv.data(), out.data(), m.data(), l.data(), p);
    for (auto _ : state) {
        if (backward) {
            k::cpu::attention_backward(qkv.data(), out.data(), m.data(), l.data(), dout.data(),
                                       dqkv.data(), p);
        } else {
            k::cpu::attention_forward(qkv.data(), out.data(), m.data(), l.data(), p);
        }
        benchmark::ClobberMemory();
    }
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

const bool kRegistered = [] {
    for (const bool backward : {false, true})
        for (AccumMode m : dt::bench::kAllModes) {
            const std::string name = std::string(backward ? "AttentionBwd" : "AttentionFwd") +
                                     "_8x256x6x32/" + dt::bench::mode_name(m);
            benchmark::RegisterBenchmark(name.c_str(), run_attention, backward, m)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
    return true;
}();

}  // namespace
