// SPDX-License-Identifier: MIT
// cpu pooling throughput (bytes/s = bytes read + written per call) on SmallCNN's maps at batch
// 128: max pool 2x2 s2 (fast path) forward and backward on (128,16,28,28), (128,32,14,14),
// (128,32,7,7); the same 2x2 s2 through the general loop (padding-free 2x2 with stride 2 written as
// kernel 2, stride 2 is the fast path, so the general row uses the 3x3 s2 p1 stem shape instead);
// average and global average pools. Run e.g. `dt_bench --benchmark_filter=Pool
// --benchmark_min_time=0.2s`.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <vector>

#include "kernels/pool2d.h"

namespace {

using dt::kernels::Pool2dParams;
namespace cpu = dt::kernels::cpu;

Pool2dParams make(int64_t N, int64_t C, int64_t H, int k, int s, int pad) {
    Pool2dParams p;
    p.N = N, p.C = C, p.H = H, p.W = H, p.kernel = k, p.stride = s, p.padding = pad;
    p.Ho = dt::kernels::pool2d_out_size(H, k, s, pad);
    p.Wo = p.Ho;
    return p;
}

std::vector<float> ramp(int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % 1000) * 0.001f - 0.5f;
    return v;
}

enum class Kind { kMaxFwd, kMaxBwd, kAvgFwd, kAvgBwd, kGlobalFwd };

void run_pool(benchmark::State& state, Kind kind, Pool2dParams p, int threads) {
    omp_set_num_threads(threads);
    const int64_t in = p.N * p.C * p.H * p.W, out = p.N * p.C * p.Ho * p.Wo;
    std::vector<float> x = ramp(in), y(out), dy = ramp(out), dx(in);
    std::vector<int32_t> am(out);
    cpu::maxpool2d_forward(x.data(), y.data(), am.data(), p);
    double bytes = 0;
    for (auto _ : state) {
        switch (kind) {
            case Kind::kMaxFwd:
                cpu::maxpool2d_forward(x.data(), y.data(), am.data(), p);
                break;
            case Kind::kMaxBwd:
                cpu::maxpool2d_backward(dy.data(), am.data(), dx.data(), p);
                break;
            case Kind::kAvgFwd:
                cpu::avgpool2d_forward(x.data(), y.data(), p);
                break;
            case Kind::kAvgBwd:
                cpu::avgpool2d_backward(dy.data(), dx.data(), p);
                break;
            case Kind::kGlobalFwd:
                cpu::global_avgpool_forward(x.data(), y.data(), p.N * p.C, p.H * p.W);
                break;
        }
        benchmark::ClobberMemory();
    }
    switch (kind) {
        case Kind::kMaxFwd:
            bytes = 4.0 * in + 8.0 * out;
            break;  // x in; y, argmax out
        case Kind::kMaxBwd:
            bytes = 8.0 * out + 4.0 * in;
            break;  // dy, argmax in; dx out
        case Kind::kAvgFwd:
            bytes = 4.0 * in + 4.0 * out;
            break;
        case Kind::kAvgBwd:
            bytes = 4.0 * out + 4.0 * in;
            break;
        case Kind::kGlobalFwd:
            bytes = 4.0 * in + 4.0 * p.N * p.C;
            break;
    }
    state.counters["bytes/s"] =
        benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::to_string(threads) + " thread(s)");
    omp_set_num_threads(omp_get_num_procs());
}

#define DT_POOL_BENCH(name, kind, params)                                   \
    BENCHMARK_CAPTURE(run_pool, name##_1t, kind, params, 1)->UseRealTime(); \
    BENCHMARK_CAPTURE(run_pool, name##_2t, kind, params, 2)->UseRealTime()

DT_POOL_BENCH(MaxPoolFwd_128x16x28, Kind::kMaxFwd, make(128, 16, 28, 2, 2, 0));
DT_POOL_BENCH(MaxPoolFwd_128x32x14, Kind::kMaxFwd, make(128, 32, 14, 2, 2, 0));
DT_POOL_BENCH(MaxPoolFwd_128x32x7, Kind::kMaxFwd, make(128, 32, 7, 2, 2, 0));
DT_POOL_BENCH(MaxPoolFwdGeneral3x3s2p1_128x16x28, Kind::kMaxFwd, make(128, 16, 28, 3, 2, 1));
DT_POOL_BENCH(MaxPoolBwd_128x16x28, Kind::kMaxBwd, make(128, 16, 28, 2, 2, 0));
DT_POOL_BENCH(MaxPoolBwd_128x32x14, Kind::kMaxBwd, make(128, 32, 14, 2, 2, 0));
DT_POOL_BENCH(AvgPoolFwd_128x16x28, Kind::kAvgFwd, make(128, 16, 28, 2, 2, 0));
DT_POOL_BENCH(AvgPoolBwd_128x16x28, Kind::kAvgBwd, make(128, 16, 28, 2, 2, 0));
DT_POOL_BENCH(GlobalAvgPoolFwd_128x32x7, Kind::kGlobalFwd, make(128, 32, 7, 7, 1, 0));

}  // namespace
