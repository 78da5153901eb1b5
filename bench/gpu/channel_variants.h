// SPDX-License-Identifier: MIT
// dt_gpu_kernel_bench's per-channel totals lines: bias.grad, bn.stats and bn.backward (the sites
// built on kernels/cuda/channel_totals.cuh) run the staged way (the default: the leaves by the
// staged block program of channel_leaves_staged.h for rows of at least kStagedMinLen positions,
// the tree combine by the block program of channel_combine_block.h) against the rows way (one
// thread per row, one per sum and channel: ChannelLeavesWay::kRows), for the reference models'
// long-row shapes and one short-row shape (ResNet-18's last layer: rows of 16, leaves a thread
// per row both ways, so that its tree lines time the combines alone), in the tree, atomic and
// exact modes; and whether both ways gave the same bits (they must, but in atomic: its order is
// timing's). Prints {"op": "channel", ...} per kernel x shape x mode.
#pragma once
#include <cstdio>
#include <functional>
#include <string>

#include "bench/gpu/kernel_bench_common.h"
#include "engine/core/tensor.h"
#include "kernels/batchnorm2d.h"
#include "kernels/bias_add.h"

namespace dt::bench {

/// At batch n (128: the reference models').
inline void channel_variants(Timer& timer, int reps, int64_t n) {
    namespace cu = kernels::cuda;
    namespace kc = kernels::common;
    struct Shape {
        int64_t c, hw;
        const char* model;
    };
    const Shape shapes[] = {{16, 28, "smallcnn conv1"},
                            {64, 32, "resnet18 layer1"},
                            {128, 16, "resnet18 layer2"},
                            {512, 4, "resnet18 layer4"}};
    const kc::AccumMode modes[] = {kc::AccumMode::kTree, kc::AccumMode::kAtomic,
                                   kc::AccumMode::kExact};
    const cu::ChannelLeavesWay before = cu::channel_leaves_way();
    // Times run(out) with either way; prints the line.
    const auto time_both = [&](const char* kernel, const std::string& shape, kc::AccumMode mode,
                               int64_t out_n, const std::function<void(float*)>& run) {
        const TwoWays t = time_two_ways(
            timer, reps, out_n,
            [](int w) {
                cu::set_channel_leaves_way(w == 0 ? cu::ChannelLeavesWay::kStaged
                                                  : cu::ChannelLeavesWay::kRows);
            },
            run);
        std::printf(
            "{\"op\": \"channel\", \"kernel\": \"%s\", \"shape\": \"%s\", \"mode\": \"%s\", "
            "\"staged_ms\": %.4f, \"rows_ms\": %.4f, \"staged_vs_rows\": %.3f, \"bits_equal\": "
            "%s}\n",
            kernel, shape.c_str(), kc::accum_mode_name(mode), t.ms[0], t.ms[1], t.ms[0] / t.ms[1],
            mode == kc::AccumMode::kAtomic ? "null" : (t.same_bits ? "true" : "false"));
        std::fflush(stdout);
    };
    for (const Shape& s : shapes) {
        const std::string name = std::string(s.model) + " " + dims({n, s.c, s.hw, s.hw});
        const int64_t hw = s.hw * s.hw, numel = n * s.c * hw;
        const Tensor x = uniform({n, s.c, s.hw, s.hw}, 51), dy = uniform({n, s.c, s.hw, s.hw}, 52);
        const Tensor gamma = uniform({s.c}, 53), mean = uniform({s.c}, 54);
        const Tensor invstd = Tensor::full({s.c}, 1.5f, Device::kCuda);
        Tensor scratch = Tensor::empty({numel + 3 * s.c}, DType::kF32, Device::kCuda);
        for (const kc::AccumMode mode : modes) {
            kernels::BiasAddParams b{n, s.c, hw};
            b.accum = kc::accum_spec(mode);
            time_both("bias.grad", name, mode, s.c,
                      [&](float* db) { cu::bias_add_backward(dy.f32(), db, b); });
            kernels::BatchNorm2dParams p{n, s.c, hw};
            p.accum = kc::accum_spec(mode);
            float* sp = scratch.f32();
            time_both("bn.stats", name, mode, s.c,
                      [&](float* var) { cu::batchnorm2d_stats(x.f32(), sp, var, sp + s.c, p); });
            time_both("bn.backward", name, mode, s.c, [&](float* dgamma) {
                cu::batchnorm2d_backward(dy.f32(), x.f32(), mean.f32(), invstd.f32(), gamma.f32(),
                                         sp + 3 * s.c, dgamma, sp + 2 * s.c, true, p);
            });
        }
    }
    cu::set_channel_leaves_way(before);
}

}  // namespace dt::bench
