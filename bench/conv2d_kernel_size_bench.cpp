// SPDX-License-Identifier: MIT
// conv2d forward, conv.dgrad and conv.wgrad per kernel size 1, 3, 5, 7 and per accumulation mode:
// the CPU counterpart of Figure 9b of Zhuang et al. 2021 (cost of determinism per kernel size).
// Shape: MediumCNN's second convolution on CIFAR (batch 64, 16x16x16 -> 32, 'same' padding k/2).
// Every iteration times an atomic call, then the mode's call (bench_util.h timed_loop):
// vs_atomic = fastest mode call / fastest atomic call. Forward has no reduction mode (one
// recipe); it is timed once per kernel size for scale. FLOP/s = 2 N Co P Ci k^2 per pass.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/conv2d.h"

namespace {

namespace k = dt::kernels;
using dt::bench::AccumMode;

k::Conv2dParams shape(int64_t ks) {
    return k::Conv2dParams{.n = 64, .ci = 16, .h = 16, .w = 16, .co = 32, .kh = ks, .kw = ks,
                           .stride = 1, .pad = ks / 2, .ho = 16, .wo = 16};
}

double flops(const k::Conv2dParams& p) {
    return 2.0 * static_cast<double>(p.n * p.co * p.ho * p.wo * p.ci * p.kh * p.kw);
}

enum class Pass { kDgrad, kWgrad };

void pass_mode(benchmark::State& state, int64_t ks, Pass pass, AccumMode mode) {
    k::Conv2dParams p = shape(ks);
    const auto x = dt::bench::uniform(p.n * p.ci * p.h * p.w, 1);
    const auto w = dt::bench::uniform(p.co * p.ci * p.kh * p.kw, 2);
    const auto dy = dt::bench::uniform(p.n * p.co * p.ho * p.wo, 3);
    std::vector<float> out(pass == Pass::kDgrad ? x.size() : w.size());
    dt::bench::timed_loop(state, mode, [&](AccumMode m) {
        p.accum = k::common::accum_spec(m, 99);
        if (pass == Pass::kDgrad) {
            k::cpu::conv2d_backward_data(dy.data(), w.data(), out.data(), p);
        } else {
            k::cpu::conv2d_backward_weight(x.data(), dy.data(), out.data(), p);
        }
    });
    state.counters["FLOP/s"] =
        benchmark::Counter(flops(p), benchmark::Counter::kIsIterationInvariantRate);
}

void forward(benchmark::State& state, int64_t ks) {
    const k::Conv2dParams p = shape(ks);
    const auto x = dt::bench::uniform(p.n * p.ci * p.h * p.w, 1);
    const auto w = dt::bench::uniform(p.co * p.ci * p.kh * p.kw, 2);
    const auto b = dt::bench::uniform(p.co, 4);
    std::vector<float> y(static_cast<std::size_t>(p.n * p.co * p.ho * p.wo));
    for (auto _ : state) {
        k::cpu::conv2d_forward(x.data(), w.data(), b.data(), y.data(), p);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["FLOP/s"] =
        benchmark::Counter(flops(p), benchmark::Counter::kIsIterationInvariantRate);
}

const int registered = [] {
    for (int64_t ks : {1, 3, 5, 7}) {
        const std::string k_name = "ConvK" + std::to_string(ks);
        benchmark::RegisterBenchmark((k_name + "/forward").c_str(), forward, ks)->UseRealTime();
        for (Pass pass : {Pass::kDgrad, Pass::kWgrad}) {
            for (AccumMode m : dt::bench::kAllModes) {
                const std::string name = k_name + (pass == Pass::kDgrad ? "/dgrad/" : "/wgrad/") +
                                         dt::bench::mode_name(m);
                benchmark::RegisterBenchmark(name.c_str(), pass_mode, ks, pass, m)->UseManualTime();
            }
        }
    }
    return 0;
}();

}  // namespace
