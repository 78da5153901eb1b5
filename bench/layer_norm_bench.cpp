// SPDX-License-Identifier: MIT
// cpu layer_norm per accumulation mode at a GPT block's shape: M = 32 * 256 tokens (32 sequences
// of 256), C = 192. Forward: each token's two row sums (mean, variance), then y. Backward: each
// token's two row sums and dx, then dgamma and dbeta over the tokens. 1 and 2 threads.
// Counter bytes/s: x read and y written, or dy and x read and dx written, once each. Run e.g.
// `dt_bench --benchmark_filter=LayerNorm --benchmark_min_time=0.2`.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/layer_norm.h"

namespace {

using dt::kernels::LayerNormParams;
using dt::kernels::common::AccumMode;
namespace cpu = dt::kernels::cpu;

void run_ln(benchmark::State& state, bool backward, AccumMode mode, int threads) {
    omp_set_num_threads(threads);
    LayerNormParams p{.M = 32 * 256, .C = 192, .T = 256};
    p.accum = dt::kernels::common::accum_spec(mode, 0x9e3779b97f4a7c15u);
    const int64_t n = p.M * p.C;
    const std::vector<float> x = dt::bench::uniform(n, 1), dy = dt::bench::uniform(n, 2),
                             g = dt::bench::uniform(p.C, 3), b = dt::bench::uniform(p.C, 4);
    std::vector<float> y(n), dx(n), mean(p.M), rstd(p.M), dg(p.C), db(p.C);
    cpu::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data(), p);
    for (auto _ : state) {
        if (backward) {
            cpu::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g.data(),
                                     dx.data(), dg.data(), db.data(), p);
        } else {
            cpu::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(),
                                    rstd.data(), p);
        }
        benchmark::ClobberMemory();
    }
    const double bytes = 4.0 * static_cast<double>(n) * (backward ? 3 : 2);
    state.counters["bytes/s"] =
        benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::string(dt::bench::mode_name(mode)) + ", " + std::to_string(threads) +
                   " thread(s)");
    omp_set_num_threads(omp_get_num_procs());
}

#define DT_LN_BENCH(name, backward, mode)                                   \
    BENCHMARK_CAPTURE(run_ln, name##_1t, backward, mode, 1)->UseRealTime(); \
    BENCHMARK_CAPTURE(run_ln, name##_2t, backward, mode, 2)->UseRealTime()

DT_LN_BENCH(LayerNormFwd_8192x192_tree, false, AccumMode::kTree);
DT_LN_BENCH(LayerNormFwd_8192x192_kahan, false, AccumMode::kKahan);
DT_LN_BENCH(LayerNormFwd_8192x192_exact, false, AccumMode::kExact);
DT_LN_BENCH(LayerNormFwd_8192x192_permuted, false, AccumMode::kPermuted);
DT_LN_BENCH(LayerNormFwd_8192x192_atomic, false, AccumMode::kAtomic);
DT_LN_BENCH(LayerNormBwd_8192x192_tree, true, AccumMode::kTree);
DT_LN_BENCH(LayerNormBwd_8192x192_kahan, true, AccumMode::kKahan);
DT_LN_BENCH(LayerNormBwd_8192x192_exact, true, AccumMode::kExact);
DT_LN_BENCH(LayerNormBwd_8192x192_permuted, true, AccumMode::kPermuted);
DT_LN_BENCH(LayerNormBwd_8192x192_atomic, true, AccumMode::kAtomic);

}  // namespace
