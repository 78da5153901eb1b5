// SPDX-License-Identifier: MIT
// cpu batchnorm2d throughput (bytes/s = bytes read + written per call) on SmallCNN-BN's maps at
// batch 128: training forward (stats: two reads of x; apply: read x, write y) and backward (two
// reads of dy and x, write dx), 1 and 2 threads. Run e.g.
// `dt_bench --benchmark_filter=BatchNorm --benchmark_min_time=0.2`.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>
#include <vector>

#include "kernels/batchnorm2d.h"

namespace {

using dt::kernels::BatchNorm2dParams;
namespace cpu = dt::kernels::cpu;

std::vector<float> ramp(int64_t n, int64_t mod) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % mod) * 0.001f - 0.5f;
    return v;
}

void run_bn(benchmark::State& state, bool backward, BatchNorm2dParams p, int threads) {
    omp_set_num_threads(threads);
    const int64_t n = p.N * p.C * p.HW;
    std::vector<float> x = ramp(n, 1000), dy = ramp(n, 777), y(n), dx(n);
    std::vector<float> g(p.C, 1.0f), b(p.C, 0.0f), mean(p.C), var(p.C), is(p.C), dg(p.C), db(p.C);
    cpu::batchnorm2d_stats(x.data(), mean.data(), var.data(), is.data(), p);
    for (auto _ : state) {
        if (backward) {
            cpu::batchnorm2d_backward(dy.data(), x.data(), mean.data(), is.data(), g.data(),
                                      dx.data(), dg.data(), db.data(), true, p);
        } else {
            cpu::batchnorm2d_stats(x.data(), mean.data(), var.data(), is.data(), p);
            cpu::batchnorm2d_apply(x.data(), mean.data(), is.data(), g.data(), b.data(), y.data(),
                                   p);
        }
        benchmark::ClobberMemory();
    }
    const double bytes = backward ? 4.0 * n * 5 : 4.0 * n * 4;
    state.counters["bytes/s"] =
        benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::to_string(threads) + " thread(s)");
    omp_set_num_threads(omp_get_num_procs());
}

BatchNorm2dParams shape(int64_t C, int64_t H) { return {.N = 128, .C = C, .HW = H * H}; }

#define DT_BN_BENCH(name, backward, params)                                   \
    BENCHMARK_CAPTURE(run_bn, name##_1t, backward, params, 1)->UseRealTime(); \
    BENCHMARK_CAPTURE(run_bn, name##_2t, backward, params, 2)->UseRealTime()

DT_BN_BENCH(BatchNormFwd_128x16x28, false, shape(16, 28));
DT_BN_BENCH(BatchNormFwd_128x32x14, false, shape(32, 14));
DT_BN_BENCH(BatchNormFwd_128x32x7, false, shape(32, 7));
DT_BN_BENCH(BatchNormBwd_128x16x28, true, shape(16, 28));
DT_BN_BENCH(BatchNormBwd_128x32x14, true, shape(32, 14));
DT_BN_BENCH(BatchNormBwd_128x32x7, true, shape(32, 7));

}  // namespace
