// SPDX-License-Identifier: MIT
// Cost of every accumulation mode at the conv / linear / bias reduction sites (conv.wgrad,
// conv.dgrad, linear.wgrad, linear.dgrad, bias.grad) on the shapes of SmallCNN (batch 128:
// 28x28x1->16, 14x14x16->32, 7x7x32->32, 3x3 pad 1; fc1 288->32), MediumCNN k = 3 (batch 64,
// CIFAR: conv2 16x16x16->32, conv4 4x4x64->128, conv6 1x1x256->512) and ResNet-18's stage-3
// convolution (8x8x256->256, batch 128). Per case and mode, every iteration times one atomic
// call and one call of the mode; vs_atomic = fastest mode call / fastest atomic call (see
// timed_loop). Wall-clock time, OpenMP default threads. Data uniform in [-1, 1). The weight and
// bias gradient sites also time `exact_accumulate`: the exact mode as a part of a split batch
// calls it (exact_out: the unrounded sums added to the caller's accumulators, no rounding;
// engine/runtime/batch_split.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/bias_add.h"
#include "kernels/common/accum_mode.h"
#include "kernels/common/philox.h"
#include "kernels/conv2d.h"
#include "kernels/linear.h"

namespace {

namespace k = dt::kernels;
using k::common::AccumMode;

constexpr auto& kModes = dt::bench::kAllModes;
using dt::bench::mode_name;
using dt::bench::timed_loop;
using dt::bench::uniform;

k::Conv2dParams conv(int64_t n, int64_t ci, int64_t hw, int64_t co) {
    return k::Conv2dParams{.n = n,
                           .ci = ci,
                           .h = hw,
                           .w = hw,
                           .co = co,
                           .kh = 3,
                           .kw = 3,
                           .stride = 1,
                           .pad = 1,
                           .ho = hw,
                           .wo = hw};
}

enum class Site { kWgrad, kDgrad, kBias };

// A layer's sizes and its two gradient kernels: the three reduction sites of conv2d and linear
// (the bias gradient is bias_add_backward over `channels` channels of `positions` positions).
template <class Params>
struct Layer {
    Params p;
    int64_t x_size, w_size, y_size, channels, positions;
    void (*dgrad)(const float* dy, const float* w, float* dx, const Params& p);
    void (*wgrad)(const float* x, const float* dy, float* dw, const Params& p);
};

Layer<k::Conv2dParams> conv_layer(const k::Conv2dParams& p) {
    return {.p = p,
            .x_size = p.n * p.ci * p.h * p.w,
            .w_size = p.co * p.ci * p.kh * p.kw,
            .y_size = p.n * p.co * p.ho * p.wo,
            .channels = p.co,
            .positions = p.ho * p.wo,
            .dgrad = k::cpu::conv2d_backward_data,
            .wgrad = k::cpu::conv2d_backward_weight};
}

Layer<k::LinearParams> linear_layer(const k::LinearParams& p) {
    return {.p = p,
            .x_size = p.n * p.in,
            .w_size = p.out * p.in,
            .y_size = p.n * p.out,
            .channels = p.out,
            .positions = 1,
            .dgrad = k::cpu::linear_backward_data,
            .wgrad = k::cpu::linear_backward_weight};
}

template <class Params>
void layer_site(benchmark::State& state, Layer<Params> l, Site site, AccumMode mode,
                bool into_accs) {
    const auto x = uniform(l.x_size, 1), w = uniform(l.w_size, 2), dy = uniform(l.y_size, 3);
    std::vector<float> out(site == Site::kWgrad   ? w.size()
                           : site == Site::kDgrad ? x.size()
                                                  : static_cast<std::size_t>(l.channels));
    std::vector<k::common::ExactAcc> accs(into_accs ? out.size() : 0, k::common::ExactAcc{});
    Params& p = l.p;
    timed_loop(state, mode, [&](AccumMode m) {
        p.accum = k::common::accum_spec(m, 99);
        p.exact_out = into_accs && m == AccumMode::kExact ? accs.data() : nullptr;
        const k::BiasAddParams bp{.n = p.n,
                                  .c = l.channels,
                                  .p = l.positions,
                                  .accum = p.accum,
                                  .exact_out = p.exact_out};
        switch (site) {
            case Site::kWgrad:
                l.wgrad(x.data(), dy.data(), out.data(), p);
                break;
            case Site::kDgrad:
                l.dgrad(dy.data(), w.data(), out.data(), p);
                break;
            case Site::kBias:
                k::cpu::bias_add_backward(dy.data(), out.data(), bp);
                break;
        }
    });
}

/// One benchmark per mode of `site` (and exact_accumulate where a weight or bias gradient has
/// it), in `unit`, with a fixed iteration count when `iterations` > 0.
template <class Params>
void add_site(const std::string& name, const Layer<Params>& l, Site site, benchmark::TimeUnit unit,
              int64_t iterations = 0) {
    auto add = [&](const std::string& mode, AccumMode m, bool into_accs) {
        auto* b = benchmark::RegisterBenchmark((name + "/" + mode).c_str(), layer_site<Params>, l,
                                               site, m, into_accs);
        b->UseManualTime()->Unit(unit);
        if (iterations > 0) b->Iterations(iterations);
    };
    for (AccumMode m : kModes) add(mode_name(m), m, false);
    if (site != Site::kDgrad) add("exact_accumulate", AccumMode::kExact, true);
}

// The conv cases: name, conv(n, ci, hw, co), site, fixed iterations (0: Google Benchmark's).
struct ConvCase {
    const char* name;
    int64_t n, ci, hw, co;
    Site site;
    int64_t iterations;
};

constexpr ConvCase kConvCases[] = {
    // SmallCNN, batch 128.
    {"small_c1_wgrad", 128, 1, 28, 16, Site::kWgrad, 0},
    {"small_c2_wgrad", 128, 16, 14, 32, Site::kWgrad, 0},
    {"small_c3_wgrad", 128, 32, 7, 32, Site::kWgrad, 0},
    {"small_c2_dgrad", 128, 16, 14, 32, Site::kDgrad, 0},
    {"small_c3_dgrad", 128, 32, 7, 32, Site::kDgrad, 0},
    {"small_c1_bias", 128, 1, 28, 16, Site::kBias, 0},
    {"small_c3_bias", 128, 32, 7, 32, Site::kBias, 0},
    // MediumCNN k = 3 on CIFAR, batch 64.
    {"medium_c2_wgrad", 64, 16, 16, 32, Site::kWgrad, 0},
    {"medium_c4_wgrad", 64, 64, 4, 128, Site::kWgrad, 0},
    {"medium_c6_wgrad", 64, 256, 1, 512, Site::kWgrad, 0},
    {"medium_c2_dgrad", 64, 16, 16, 32, Site::kDgrad, 0},
    {"medium_c4_dgrad", 64, 64, 4, 128, Site::kDgrad, 0},
    {"medium_c6_dgrad", 64, 256, 1, 512, Site::kDgrad, 0},
    // ResNet-18 stages 1-4 (32x32x64 ... 4x4x512, 3x3), batch 128: a few iterations only.
    {"resnet_s1_wgrad", 128, 64, 32, 64, Site::kWgrad, 3},
    {"resnet_s2_wgrad", 128, 128, 16, 128, Site::kWgrad, 3},
    {"resnet_s3_wgrad", 128, 256, 8, 256, Site::kWgrad, 3},
    {"resnet_s4_wgrad", 128, 512, 4, 512, Site::kWgrad, 3},
    {"resnet_s3_dgrad", 128, 256, 8, 256, Site::kDgrad, 3},
};

const bool registered = [] {
    for (const ConvCase& c : kConvCases) {
        add_site(c.name, conv_layer(conv(c.n, c.ci, c.hw, c.co)), c.site, benchmark::kMillisecond,
                 c.iterations);
    }
    // SmallCNN's fc1, batch 128.
    const Layer<k::LinearParams> fc1 = linear_layer({.n = 128, .in = 288, .out = 32});
    add_site("small_fc1_wgrad", fc1, Site::kWgrad, benchmark::kMicrosecond);
    add_site("small_fc1_dgrad", fc1, Site::kDgrad, benchmark::kMicrosecond);
    add_site("small_fc1_bias", fc1, Site::kBias, benchmark::kMicrosecond);
    return true;
}();

}  // namespace
