// SPDX-License-Identifier: MIT
// GELU forward/backward throughput on a GPT MLP activation: 32 sequences x 256 tokens x 768.
#include <benchmark/benchmark.h>

#include <vector>

#include "kernels/gelu.h"

namespace {

constexpr int64_t kN = 32 * 256 * 768;

std::vector<float> activations() {
    std::vector<float> x(kN);
    for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>((i % 97) - 48) / 12.0f;
    return x;
}

void BM_GeluForward(benchmark::State& state) {
    const std::vector<float> x = activations();
    std::vector<float> y(kN);
    for (auto _ : state) {
        dt::kernels::cpu::gelu_forward(x.data(), y.data(), kN);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_GeluForward)->Unit(benchmark::kMillisecond);

void BM_GeluBackward(benchmark::State& state) {
    const std::vector<float> x = activations(), dy(kN, 1.0f);
    std::vector<float> dx(kN);
    for (auto _ : state) {
        dt::kernels::cpu::gelu_backward(x.data(), dy.data(), dx.data(), kN);
        benchmark::DoNotOptimize(dx.data());
    }
    state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_GeluBackward)->Unit(benchmark::kMillisecond);

}  // namespace
