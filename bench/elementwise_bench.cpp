// SPDX-License-Identifier: MIT
// Throughput of the small kernels without a bench of their own: add (residual), bias_add and its
// bias.grad reduction, dropout forward/backward, weight init. Shapes: SmallCNN's largest
// activation (128, 16, 28, 28) and ResNet-18's first stage (128, 64, 32, 32); the init fills
// ResNet-18's largest weight (512, 512, 3, 3).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "kernels/add.h"
#include "kernels/bias_add.h"
#include "kernels/dropout.h"
#include "kernels/init.h"

namespace {

namespace k = dt::kernels;

// args: N, C, P (positions per channel)
void shapes(benchmark::internal::Benchmark* b) {
    b->Args({128, 16, 28 * 28})->Args({128, 64, 32 * 32});
}

// The (N, C, P) of a shapes() case.
k::BiasAddParams shape_of(const benchmark::State& state) {
    return {.n = state.range(0), .c = state.range(1), .p = state.range(2)};
}

// Runs kernel() per iteration, keeping its output `out`; `bytes` read and written per call.
template <class Kernel>
void time_bytes(benchmark::State& state, int64_t bytes, std::vector<float>& out, Kernel kernel) {
    for (auto _ : state) {
        kernel();
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_AddForward(benchmark::State& state) {
    const k::BiasAddParams p = shape_of(state);
    const int64_t n = p.n * p.c * p.p;
    std::vector<float> a(n, 1.0f), b(n, 2.0f), y(n);
    time_bytes(state, n * 12, y, [&] { k::cpu::add_forward(a.data(), b.data(), y.data(), n); });
}
BENCHMARK(BM_AddForward)->Apply(shapes);

void BM_BiasAddForward(benchmark::State& state) {
    const k::BiasAddParams p = shape_of(state);
    const int64_t n = p.n * p.c * p.p;
    std::vector<float> x(n, 1.0f), b(p.c, 0.5f), y(n);
    time_bytes(state, n * 8, y, [&] { k::cpu::bias_add_forward(x.data(), b.data(), y.data(), p); });
}
BENCHMARK(BM_BiasAddForward)->Apply(shapes);

void BM_BiasGradTree(benchmark::State& state) {
    const k::BiasAddParams p = shape_of(state);
    const int64_t n = p.n * p.c * p.p;
    std::vector<float> dy(n, 0.25f), db(p.c);
    time_bytes(state, n * 4, db, [&] { k::cpu::bias_add_backward(dy.data(), db.data(), p); });
}
BENCHMARK(BM_BiasGradTree)->Apply(shapes);

void BM_Dropout(benchmark::State& state) {
    k::DropoutParams p;
    p.N = state.range(0);
    p.D = state.range(1) * state.range(2);
    p.p = 0.5f;
    p.seed = 7;
    std::vector<int64_t> ids(p.N);
    for (int64_t i = 0; i < p.N; ++i) ids[i] = 1000 + 3 * i;
    std::vector<float> x(p.N * p.D, 1.0f), y(p.N * p.D), dx(p.N * p.D);
    std::vector<uint8_t> mask(p.N * p.D);
    for (auto _ : state) {
        k::cpu::dropout_forward(x.data(), ids.data(), y.data(), mask.data(), p);
        k::cpu::dropout_backward(y.data(), mask.data(), dx.data(), p);
        benchmark::DoNotOptimize(dx.data());
    }
    state.SetItemsProcessed(state.iterations() * p.N * p.D);
}
BENCHMARK(BM_Dropout)->Apply(shapes);

void BM_InitUniform(benchmark::State& state) {
    const k::InitUniformParams p{512 * 512 * 9, 7, 3, 0.02f};
    std::vector<float> v(p.n);
    for (auto _ : state) {
        k::cpu::init_uniform(v.data(), p);
        benchmark::DoNotOptimize(v.data());
    }
    state.SetItemsProcessed(state.iterations() * p.n);
}
BENCHMARK(BM_InitUniform);

}  // namespace
