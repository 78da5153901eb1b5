// SPDX-License-Identifier: MIT
// cpu::gemm throughput (FLOP/s = 2 M N K per call) per ISA path, one thread unless the name says
// otherwise: 1024^3 and the per-sample GEMMs of SmallCNN's convolutions (M, N, K):
// forward (Co, P, Ci*9), dgrad (Ci*9, P, Co) with A transposed, wgrad (Co, Ci*9, P) with B
// transposed. Run e.g. `dt_bench --benchmark_filter=Gemm --benchmark_min_time=0.2s`.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/gemm.h"

namespace {

/// Fastest repetition (--benchmark_repetitions=N): the least disturbed by other processes.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
/// Wall-clock time (multi-threaded runs) and the "min" statistic.
void timed(benchmark::internal::Benchmark* b) {
    b->UseRealTime()->ComputeStatistics("min", min_of);
}

using dt::kernels::CpuIsa;
using dt::kernels::GemmParams;

void run_gemm(benchmark::State& state, CpuIsa isa, GemmParams p, int threads) {
    namespace cpu = dt::kernels::cpu;
    if (!cpu::cpu_isa_supported(isa)) {
        state.SkipWithError("ISA not supported on this machine");
        return;
    }
    const CpuIsa saved = cpu::cpu_isa();
    cpu::cpu_isa_set(isa);
    omp_set_num_threads(threads);
    std::vector<float> a(static_cast<std::size_t>(p.m * p.k), 0.5f);
    std::vector<float> b(static_cast<std::size_t>(p.k * p.n), 0.25f);
    std::vector<float> c(static_cast<std::size_t>(p.m * p.n));
    for (auto _ : state) {
        cpu::gemm(a.data(), b.data(), c.data(), p);
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * p.m * p.n * p.k,
                                                   benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(cpu::cpu_isa_name(isa));
    cpu::cpu_isa_set(saved);
    omp_set_num_threads(omp_get_num_procs());
}

GemmParams mnk(int64_t m, int64_t n, int64_t k, bool ta = false, bool tb = false) {
    return GemmParams{.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb};
}

#define DT_GEMM_BENCH(name, params, threads)                                                     \
    BENCHMARK_CAPTURE(run_gemm, name##_avx512, CpuIsa::kAvx512, params, threads)->Apply(timed); \
    BENCHMARK_CAPTURE(run_gemm, name##_avx2, CpuIsa::kAvx2, params, threads)->Apply(timed);     \
    BENCHMARK_CAPTURE(run_gemm, name##_scalar, CpuIsa::kScalar, params, threads)->Apply(timed)

DT_GEMM_BENCH(Gemm1024, mnk(1024, 1024, 1024), 1);
BENCHMARK_CAPTURE(run_gemm, Gemm1024_avx512_2threads, CpuIsa::kAvx512, mnk(1024, 1024, 1024), 2)
    ->Apply(timed);
DT_GEMM_BENCH(GemmConv1Fwd, mnk(16, 784, 9), 1);
DT_GEMM_BENCH(GemmConv2Fwd, mnk(32, 196, 144), 1);
DT_GEMM_BENCH(GemmConv3Fwd, mnk(32, 49, 288), 1);
DT_GEMM_BENCH(GemmConv2Dgrad, mnk(144, 196, 32, true, false), 1);
DT_GEMM_BENCH(GemmConv3Dgrad, mnk(288, 49, 32, true, false), 1);
DT_GEMM_BENCH(GemmConv1Wgrad, mnk(16, 9, 784, false, true), 1);
DT_GEMM_BENCH(GemmConv2Wgrad, mnk(32, 144, 196, false, true), 1);
DT_GEMM_BENCH(GemmConv3Wgrad, mnk(32, 288, 49, false, true), 1);

}  // namespace
