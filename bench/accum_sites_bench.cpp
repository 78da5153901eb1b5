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

#include <chrono>
#include <algorithm>
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
    return k::Conv2dParams{.n = n, .ci = ci, .h = hw, .w = hw, .co = co, .kh = 3, .kw = 3,
                           .stride = 1, .pad = 1, .ho = hw, .wo = hw};
}

enum class Site { kConvWgrad, kConvDgrad, kBiasGrad };

void conv_site(benchmark::State& state, k::Conv2dParams p, Site site, AccumMode mode,
               bool into_accs) {
    const auto x = uniform(p.n * p.ci * p.h * p.w, 1), w = uniform(p.co * p.ci * p.kh * p.kw, 2);
    const auto dy = uniform(p.n * p.co * p.ho * p.wo, 3);
    std::vector<float> out(site == Site::kConvDgrad  ? x.size()
                           : site == Site::kConvWgrad ? w.size()
                                                      : static_cast<std::size_t>(p.co));
    std::vector<k::common::ExactAcc> accs(into_accs ? out.size() : 0, k::common::ExactAcc{});
    timed_loop(state, mode, [&](AccumMode m) {
        p.accum = k::common::accum_spec(m, 99);
        p.exact_out = into_accs && m == AccumMode::kExact ? accs.data() : nullptr;
        const k::BiasAddParams bp{
            .n = p.n, .c = p.co, .p = p.ho * p.wo, .accum = p.accum, .exact_out = p.exact_out};
        switch (site) {
            case Site::kConvWgrad:
                k::cpu::conv2d_backward_weight(x.data(), dy.data(), out.data(), p);
                break;
            case Site::kConvDgrad:
                k::cpu::conv2d_backward_data(dy.data(), w.data(), out.data(), p);
                break;
            case Site::kBiasGrad: k::cpu::bias_add_backward(dy.data(), out.data(), bp); break;
        }
    });
}

enum class LSite { kWgrad, kDgrad, kBias };

void linear_site(benchmark::State& state, k::LinearParams p, LSite site, AccumMode mode,
                 bool into_accs) {
    const auto x = uniform(p.n * p.in, 1), w = uniform(p.out * p.in, 2);
    const auto dy = uniform(p.n * p.out, 3);
    std::vector<float> out(site == LSite::kWgrad   ? w.size()
                           : site == LSite::kDgrad ? x.size()
                                                   : static_cast<std::size_t>(p.out));
    std::vector<k::common::ExactAcc> accs(into_accs ? out.size() : 0, k::common::ExactAcc{});
    timed_loop(state, mode, [&](AccumMode m) {
        p.accum = k::common::accum_spec(m, 99);
        p.exact_out = into_accs && m == AccumMode::kExact ? accs.data() : nullptr;
        const k::BiasAddParams bp{
            .n = p.n, .c = p.out, .p = 1, .accum = p.accum, .exact_out = p.exact_out};
        switch (site) {
            case LSite::kWgrad:
                k::cpu::linear_backward_weight(x.data(), dy.data(), out.data(), p);
                break;
            case LSite::kDgrad:
                k::cpu::linear_backward_data(dy.data(), w.data(), out.data(), p);
                break;
            case LSite::kBias: k::cpu::bias_add_backward(dy.data(), out.data(), bp); break;
        }
    });
}

void add_conv(const std::string& name, k::Conv2dParams p, Site site, int64_t iterations) {
    auto add = [&](const std::string& mode, AccumMode m, bool into_accs) {
        auto* b = benchmark::RegisterBenchmark((name + "/" + mode).c_str(), conv_site, p, site, m,
                                               into_accs);
        b->UseManualTime()->Unit(benchmark::kMillisecond);
        if (iterations > 0) b->Iterations(iterations);
    };
    for (AccumMode m : kModes) add(mode_name(m), m, false);
    if (site != Site::kConvDgrad) add("exact_accumulate", AccumMode::kExact, true);
}

void add_linear(const std::string& name, k::LinearParams p, LSite site) {
    auto add = [&](const std::string& mode, AccumMode m, bool into_accs) {
        benchmark::RegisterBenchmark((name + "/" + mode).c_str(), linear_site, p, site, m,
                                     into_accs)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    };
    for (AccumMode m : kModes) add(mode_name(m), m, false);
    if (site != LSite::kDgrad) add("exact_accumulate", AccumMode::kExact, true);
}

const bool registered = [] {
    // SmallCNN, batch 128.
    add_conv("small_c1_wgrad", conv(128, 1, 28, 16), Site::kConvWgrad, 0);
    add_conv("small_c2_wgrad", conv(128, 16, 14, 32), Site::kConvWgrad, 0);
    add_conv("small_c3_wgrad", conv(128, 32, 7, 32), Site::kConvWgrad, 0);
    add_conv("small_c2_dgrad", conv(128, 16, 14, 32), Site::kConvDgrad, 0);
    add_conv("small_c3_dgrad", conv(128, 32, 7, 32), Site::kConvDgrad, 0);
    add_conv("small_c1_bias", conv(128, 1, 28, 16), Site::kBiasGrad, 0);
    add_conv("small_c3_bias", conv(128, 32, 7, 32), Site::kBiasGrad, 0);
    add_linear("small_fc1_wgrad", k::LinearParams{.n = 128, .in = 288, .out = 32}, LSite::kWgrad);
    add_linear("small_fc1_dgrad", k::LinearParams{.n = 128, .in = 288, .out = 32}, LSite::kDgrad);
    add_linear("small_fc1_bias", k::LinearParams{.n = 128, .in = 288, .out = 32}, LSite::kBias);
    // MediumCNN k = 3 on CIFAR, batch 64.
    add_conv("medium_c2_wgrad", conv(64, 16, 16, 32), Site::kConvWgrad, 0);
    add_conv("medium_c4_wgrad", conv(64, 64, 4, 128), Site::kConvWgrad, 0);
    add_conv("medium_c6_wgrad", conv(64, 256, 1, 512), Site::kConvWgrad, 0);
    add_conv("medium_c2_dgrad", conv(64, 16, 16, 32), Site::kConvDgrad, 0);
    add_conv("medium_c4_dgrad", conv(64, 64, 4, 128), Site::kConvDgrad, 0);
    add_conv("medium_c6_dgrad", conv(64, 256, 1, 512), Site::kConvDgrad, 0);
    // ResNet-18 stages 1-4 (32x32x64 ... 4x4x512, 3x3), batch 128: a few iterations only.
    add_conv("resnet_s1_wgrad", conv(128, 64, 32, 64), Site::kConvWgrad, 3);
    add_conv("resnet_s2_wgrad", conv(128, 128, 16, 128), Site::kConvWgrad, 3);
    add_conv("resnet_s3_wgrad", conv(128, 256, 8, 256), Site::kConvWgrad, 3);
    add_conv("resnet_s4_wgrad", conv(128, 512, 4, 512), Site::kConvWgrad, 3);
    add_conv("resnet_s3_dgrad", conv(128, 256, 8, 256), Site::kConvDgrad, 3);
    return true;
}();

}  // namespace
