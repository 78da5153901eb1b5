// SPDX-License-Identifier: MIT
// cpu softmax cross-entropy throughput (logits/s) at batch 128: SmallCNN's 10 classes and a
// 1000-class head, forward (rows + tree mean) and backward, 1 thread. Run e.g.
// `dt_bench --benchmark_filter=SoftmaxXent --benchmark_min_time=0.2`.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <vector>

#include "kernels/softmax_xent.h"

namespace {

using dt::kernels::SoftmaxXentParams;
namespace cpu = dt::kernels::cpu;

void run_xent(benchmark::State& state, bool backward, int64_t N, int64_t K) {
    omp_set_num_threads(1);
    const SoftmaxXentParams p{.N = N, .K = K};
    std::vector<float> l(N * K), m(N), s(N), rows(N), dl(N * K);
    std::vector<int64_t> lab(N);
    for (int64_t i = 0; i < N * K; ++i) l[i] = static_cast<float>((i * 7919) % 1000) * 0.01f - 5;
    for (int64_t n = 0; n < N; ++n) lab[n] = (n * 3) % K;
    float loss = 0;
    cpu::softmax_xent_forward(l.data(), lab.data(), m.data(), s.data(), rows.data(), &loss, p);
    for (auto _ : state) {
        if (backward) {
            const float one = 1.0f;
            cpu::softmax_xent_backward(l.data(), lab.data(), m.data(), s.data(), &one, dl.data(),
                                       p);
        } else {
            cpu::softmax_xent_forward(l.data(), lab.data(), m.data(), s.data(), rows.data(), &loss,
                                      p);
        }
        benchmark::ClobberMemory();
    }
    state.counters["logits/s"] = benchmark::Counter(static_cast<double>(N * K),
                                                    benchmark::Counter::kIsIterationInvariantRate);
    state.counters["bytes/s"] = benchmark::Counter(4.0 * N * K * (backward ? 2 : 1),
                                                   benchmark::Counter::kIsIterationInvariantRate);
    omp_set_num_threads(omp_get_num_procs());
}

BENCHMARK_CAPTURE(run_xent, SoftmaxXentFwd_128x10, false, 128, 10)->UseRealTime();
BENCHMARK_CAPTURE(run_xent, SoftmaxXentBwd_128x10, true, 128, 10)->UseRealTime();
BENCHMARK_CAPTURE(run_xent, SoftmaxXentFwd_128x1000, false, 128, 1000)->UseRealTime();
BENCHMARK_CAPTURE(run_xent, SoftmaxXentBwd_128x1000, true, 128, 1000)->UseRealTime();

}  // namespace
