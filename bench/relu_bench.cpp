// SPDX-License-Identifier: MIT
// ReLU forward/backward throughput on SmallCNN's largest activation (128, 16, 28, 28).
#include <benchmark/benchmark.h>

#include <vector>

#include "kernels/relu.h"

namespace {

void BM_ReluForward(benchmark::State& state) {
    const int64_t n = 128 * 16 * 28 * 28;
    std::vector<float> x(n), y(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i % 13) - 6);
    for (auto _ : state) {
        dt::kernels::cpu::relu_forward(x.data(), y.data(), n);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * n * 8);
}
BENCHMARK(BM_ReluForward);

void BM_ReluBackward(benchmark::State& state) {
    const int64_t n = 128 * 16 * 28 * 28;
    std::vector<float> x(n), dy(n, 1.0f), dx(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i % 13) - 6);
    for (auto _ : state) {
        dt::kernels::cpu::relu_backward(x.data(), dy.data(), dx.data(), n);
        benchmark::DoNotOptimize(dx.data());
    }
    state.SetBytesProcessed(state.iterations() * n * 12);
}
BENCHMARK(BM_ReluBackward);

}  // namespace
