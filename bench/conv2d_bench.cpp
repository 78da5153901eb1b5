// SPDX-License-Identifier: MIT
// conv2d kernels on SmallCNN's convolution shapes at batch 128 (3x3, stride 1, padding 1):
// c1 28x28x1->16, c2 14x14x16->32, c3 7x7x32->32. FLOP/s = 2 N Co P R per pass (forward, dgrad,
// wgrad each). SmallCNNConvStep times one training step's conv work: three forwards, dgrad of
// c2 and c3, wgrad and bias.grad of all three. resnet_s1..s4: the 3x3 convolution repeated in
// each ResNet-18 (CIFAR) stage at batch 32 (64..512 channels on 32x32..4x4 maps), compared with
// PyTorch layer by layer in scripts/perf_resnet_layers.py. Threads: OpenMP default (real time).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "kernels/bias_add.h"
#include "kernels/conv2d.h"

namespace {

/// Fastest repetition (--benchmark_repetitions=N): the least disturbed by other processes.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
/// Wall-clock time (multi-threaded runs) and the "min" statistic.
void timed(benchmark::internal::Benchmark* b) {
    b->UseRealTime()->ComputeStatistics("min", min_of);
}

using dt::kernels::Conv2dParams;

Conv2dParams smallcnn(int layer) {
    const int64_t ci[] = {1, 16, 32}, co[] = {16, 32, 32}, hw[] = {28, 14, 7};
    return Conv2dParams{.n = 128, .ci = ci[layer], .h = hw[layer], .w = hw[layer],
                        .co = co[layer], .kh = 3, .kw = 3, .stride = 1, .pad = 1,
                        .ho = hw[layer], .wo = hw[layer]};
}

/// ResNet-18 (CIFAR) stage s = 0..3 at batch 32: the 3x3 convolution that repeats in the stage.
Conv2dParams resnet(int stage) {
    const int64_t c = int64_t{64} << stage, hw = int64_t{32} >> stage;
    return Conv2dParams{.n = 32, .ci = c, .h = hw, .w = hw, .co = c, .kh = 3, .kw = 3,
                        .stride = 1, .pad = 1, .ho = hw, .wo = hw};
}

double flops(const Conv2dParams& p) {
    return 2.0 * p.n * p.co * p.ho * p.wo * p.ci * p.kh * p.kw;
}

struct Buffers {
    std::vector<float> x, w, b, y, dy, dx, dw, db;
    explicit Buffers(const Conv2dParams& p)
        : x(p.n * p.ci * p.h * p.w, 0.5f), w(p.co * p.ci * p.kh * p.kw, 0.25f), b(p.co, 0.1f),
          y(p.n * p.co * p.ho * p.wo), dy(y.size(), 0.125f), dx(x.size()), dw(w.size()),
          db(p.co) {}
};

enum Pass { kForward, kDgrad, kWgrad };

void conv_pass(benchmark::State& state, int layer, Pass pass) {
    namespace cpu = dt::kernels::cpu;
    const Conv2dParams p = layer < 10 ? smallcnn(layer) : resnet(layer - 10);
    Buffers m(p);
    for (auto _ : state) {
        switch (pass) {
            case kForward:
                cpu::conv2d_forward(m.x.data(), m.w.data(), m.b.data(), m.y.data(), p);
                break;
            case kDgrad: cpu::conv2d_backward_data(m.dy.data(), m.w.data(), m.dx.data(), p); break;
            case kWgrad:
                cpu::conv2d_backward_weight(m.x.data(), m.dy.data(), m.dw.data(), p);
                break;
        }
        benchmark::ClobberMemory();
    }
    state.counters["FLOP/s"] =
        benchmark::Counter(flops(p), benchmark::Counter::kIsIterationInvariantRate);
}

void SmallCNNConvStep(benchmark::State& state) {
    namespace cpu = dt::kernels::cpu;
    std::vector<Conv2dParams> ps = {smallcnn(0), smallcnn(1), smallcnn(2)};
    std::vector<Buffers> bufs(ps.begin(), ps.end());
    double total = 0;
    for (int l = 0; l < 3; ++l) total += flops(ps[l]) * (l == 0 ? 2 : 3);
    for (auto _ : state) {
        for (int l = 0; l < 3; ++l) {
            Buffers& m = bufs[l];
            cpu::conv2d_forward(m.x.data(), m.w.data(), m.b.data(), m.y.data(), ps[l]);
        }
        for (int l = 2; l >= 0; --l) {
            Buffers& m = bufs[l];
            const Conv2dParams& p = ps[l];
            if (l > 0) cpu::conv2d_backward_data(m.dy.data(), m.w.data(), m.dx.data(), p);
            cpu::conv2d_backward_weight(m.x.data(), m.dy.data(), m.dw.data(), p);
            cpu::bias_add_backward(m.dy.data(), m.db.data(),
                                   {.n = p.n, .c = p.co, .p = p.ho * p.wo});
        }
        benchmark::ClobberMemory();
    }
    state.counters["FLOP/s"] =
        benchmark::Counter(total, benchmark::Counter::kIsIterationInvariantRate);
}

void BiasGrad(benchmark::State& state, int layer) {
    const Conv2dParams p = smallcnn(layer);
    Buffers m(p);
    for (auto _ : state) {
        dt::kernels::cpu::bias_add_backward(m.dy.data(), m.db.data(),
                                            {.n = p.n, .c = p.co, .p = p.ho * p.wo});
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(m.dy.size() * 4));
}

BENCHMARK_CAPTURE(conv_pass, c1_forward, 0, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c1_wgrad, 0, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c2_forward, 1, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c2_dgrad, 1, kDgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c2_wgrad, 1, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c3_forward, 2, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c3_dgrad, 2, kDgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, c3_wgrad, 2, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s1_forward, 10, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s1_dgrad, 10, kDgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s1_wgrad, 10, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s2_forward, 11, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s2_dgrad, 11, kDgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s2_wgrad, 11, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s3_forward, 12, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s3_dgrad, 12, kDgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s3_wgrad, 12, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s4_forward, 13, kForward)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s4_dgrad, 13, kDgrad)->Apply(timed);
BENCHMARK_CAPTURE(conv_pass, resnet_s4_wgrad, 13, kWgrad)->Apply(timed);
BENCHMARK_CAPTURE(BiasGrad, c1, 0)->Apply(timed);
BENCHMARK_CAPTURE(BiasGrad, c2, 1)->Apply(timed);
BENCHMARK(SmallCNNConvStep)->Apply(timed)->Unit(benchmark::kMillisecond);

}  // namespace
