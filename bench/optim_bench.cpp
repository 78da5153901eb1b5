// SPDX-License-Identifier: MIT
// Throughput of the optimizer update kernels (kernels/sgd.h, kernels/adam.h) and the non-finite
// scan every gradient of every step goes through (kernels/finite.h), per parameter size: SmallCNN's
// largest tensor (fc1, 32 x 288), ResNet-18's largest (512 x 512 x 3 x 3) and a 16M-element one.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "kernels/adam.h"
#include "kernels/finite.h"
#include "kernels/sgd.h"

namespace {

namespace k = dt::kernels;

void sizes(benchmark::internal::Benchmark* b) {
    b->Arg(32 * 288)->Arg(512 * 512 * 9)->Arg(int64_t{1} << 24);
}

void BM_SgdMomentumUpdate(benchmark::State& state) {
    const int64_t n = state.range(0);
    std::vector<float> p(n, 0.5f), g(n, 1e-3f), buf(n, 0.0f);
    const k::SgdParams q{.n = n, .lr = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f};
    for (auto _ : state) {
        k::cpu::sgd_update(p.data(), g.data(), buf.data(), q);
        benchmark::DoNotOptimize(p.data());
    }
    state.SetBytesProcessed(state.iterations() * n * 20);  // read p, g, buf; write p, buf
}
BENCHMARK(BM_SgdMomentumUpdate)->Apply(sizes);

void BM_AdamWUpdate(benchmark::State& state) {
    const int64_t n = state.range(0);
    std::vector<float> p(n, 0.5f), g(n, 1e-3f), m(n, 0.0f), v(n, 0.0f);
    k::AdamParams q;
    q.n = n, q.neg_step = -1e-3f, q.c2s = 0.03f, q.wd = 0.01f, q.decay = 0.99999f;
    q.decoupled = true;
    for (auto _ : state) {
        k::cpu::adam_update(p.data(), g.data(), m.data(), v.data(), q);
        benchmark::DoNotOptimize(p.data());
    }
    state.SetBytesProcessed(state.iterations() * n * 28);  // read p, g, m, v; write p, m, v
}
BENCHMARK(BM_AdamWUpdate)->Apply(sizes);

void BM_FirstNonFinite(benchmark::State& state) {
    const int64_t n = state.range(0);
    std::vector<float> g(n, 1e-3f);  // all finite: the whole buffer is scanned
    for (auto _ : state) benchmark::DoNotOptimize(k::cpu::first_non_finite(g.data(), n));
    state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_FirstNonFinite)->Apply(sizes);

}  // namespace
