// SPDX-License-Identifier: MIT
// linear kernels at batch 128 on classifier-head shapes (in -> out): 1568 -> 128, 128 -> 10,
// 1568 -> 10. FLOP/s = 2 N I O per pass. Threads: OpenMP default (real time).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "kernels/linear.h"

namespace {

/// Fastest repetition (--benchmark_repetitions=N): the least disturbed by other processes.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
/// Wall-clock time (multi-threaded runs) and the "min" statistic.
void timed(benchmark::internal::Benchmark* b) {
    b->UseRealTime()->ComputeStatistics("min", min_of);
}

using dt::kernels::LinearParams;

enum Pass { kForward, kDgrad, kWgrad };

void linear_pass(benchmark::State& state, Pass pass) {
    namespace cpu = dt::kernels::cpu;
    const LinearParams p{.n = 128, .in = state.range(0), .out = state.range(1)};
    const auto size = [](int64_t n) { return static_cast<std::size_t>(n); };
    std::vector<float> x(size(p.n * p.in), 0.5f), w(size(p.out * p.in), 0.25f);
    std::vector<float> b(size(p.out), 0.1f), y(size(p.n * p.out)), dy(size(p.n * p.out), 0.125f);
    std::vector<float> dx(size(p.n * p.in)), dw(size(p.out * p.in));
    for (auto _ : state) {
        switch (pass) {
            case kForward: cpu::linear_forward(x.data(), w.data(), b.data(), y.data(), p); break;
            case kDgrad: cpu::linear_backward_data(dy.data(), w.data(), dx.data(), p); break;
            case kWgrad: cpu::linear_backward_weight(x.data(), dy.data(), dw.data(), p); break;
        }
        benchmark::ClobberMemory();
    }
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * p.n * p.in * p.out,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

#define DT_LINEAR_SHAPES ->Args({1568, 128})->Args({128, 10})->Args({1568, 10})->Apply(timed)
BENCHMARK_CAPTURE(linear_pass, forward, kForward) DT_LINEAR_SHAPES;
BENCHMARK_CAPTURE(linear_pass, dgrad, kDgrad) DT_LINEAR_SHAPES;
BENCHMARK_CAPTURE(linear_pass, wgrad, kWgrad) DT_LINEAR_SHAPES;

}  // namespace
