// SPDX-License-Identifier: MIT
// dt_gpu_kernel_bench's tile lines: the GEMM-shaped kernels with each tile shape of their block
// programs (kernels/cuda/tile_gemm.h: SmallTile 32 x 64, LargeTile 64 x 128, TinyTile 16 x 16),
// for the shapes of the reference models: the convolution forward, conv.wgrad in the tree mode
// (the tiled leaves, then their combination) and in the exact mode (its per-sample leaves, and
// the fold into the limbs), conv.dgrad in the tree mode (the transposed forward) and in the
// exact mode (the same cut per tap and folded), and the GEMM of a linear layer. {"op": "tile",
// ...}: the large tile against the small one on ResNet-18's and SmallCNN's larger shapes; {"op":
// "tiny", ...}: the tiny tile against the small one on the shapes where the automatic choice takes
// the tiny one (few blocks of the small tile: SmallCNN's convolutions, a first layer's wgrad, its
// linear layers) and on ResNet-18's layer1 (its tree wgrad's few blocks). Each line: both medians,
// their ratio and whether the two shapes gave the same bits on this GPU (they must: the chains are
// the same). Which shape to launch where is decided from these figures.
#pragma once
#include <cstdio>
#include <functional>
#include <string>

#include "bench/gpu/kernel_bench_common.h"
#include "engine/core/tensor.h"
#include "kernels/conv2d.h"
#include "kernels/gemm.h"

namespace dt::bench {

/// At batch n (128: the reference models').
inline void tile_variants(Timer& timer, int reps, int64_t n) {
    namespace cu = kernels::cuda;
    namespace kc = kernels::common;
    using kernels::Conv2dParams;
    const cu::TileChoice before = cu::tile_choice();
    // Times run(out) with the small tile and with the tiny one (op "tiny") or the large one
    // (op "tile"); prints the line.
    const auto time_pair = [&](bool tiny, const char* kernel, const std::string& shape,
                               const std::function<void(float*)>& run, int64_t out_n) {
        const cu::TileChoice other = tiny ? cu::TileChoice::kTiny : cu::TileChoice::kLarge;
        const TwoWays t = time_two_ways(
            timer, reps, out_n,
            [&](int w) { cu::set_tile_choice(w == 0 ? cu::TileChoice::kSmall : other); }, run);
        const char* name = tiny ? "tiny" : "large";
        std::printf(
            "{\"op\": \"%s\", \"kernel\": \"%s\", \"shape\": \"%s\", \"small_ms\": %.4f, "
            "\"%s_ms\": %.4f, \"%s_vs_small\": %.3f, \"bits_equal\": %s}\n",
            tiny ? "tiny" : "tile", kernel, shape.c_str(), t.ms[0], name, t.ms[1], name,
            t.ms[1] / t.ms[0], t.same_bits ? "true" : "false");
        std::fflush(stdout);
    };
    struct ConvShape {
        int64_t ci, hw, co;
        const char* model;
        bool tiny;  // a tiny-tile comparison (else large)
    };
    const ConvShape shapes[] = {
        {1, 28, 16, "smallcnn conv1", true},
        {16, 14, 32, "smallcnn conv2", true},
        {32, 7, 32, "smallcnn conv3", true},
        {16, 14, 32, "smallcnn conv2", false},
        {64, 32, 64, "resnet18 layer1", false},
        {128, 16, 128, "resnet18 layer2", false},
        {256, 8, 256, "resnet18 layer3", false},
        {512, 4, 512, "resnet18 layer4", false},
        // The automatic choice takes the small tile here, but its tree wgrad makes 144 blocks of
        // 16-sample chains (18 tiles x 8 groups: one or two a SM), the tiny one 1152
        {64, 32, 64, "resnet18 layer1", true}};
    for (const ConvShape& s : shapes) {
        Conv2dParams p{n, s.ci, s.hw, s.hw, s.co, 3, 3, 1, 1};
        p.ho = p.h, p.wo = p.w;
        const Tensor x = uniform({p.n, p.ci, p.h, p.w}, 31), w = uniform({p.co, p.ci, 3, 3}, 32),
                     dy = uniform({p.n, p.co, p.ho, p.wo}, 33);
        const std::string name = std::string(s.model) + " " + dims({p.n, p.ci, p.h, p.w}) +
                                 " k3 co" + std::to_string(p.co);
        time_pair(
            s.tiny, "conv.forward", name,
            [&](float* y) { cu::conv2d_forward(x.f32(), w.f32(), nullptr, y, p); },
            p.n * p.co * p.ho * p.wo);
        Conv2dParams tree = p, exact = p;
        tree.accum = kc::accum_spec(kc::AccumMode::kTree);
        exact.accum = kc::accum_spec(kc::AccumMode::kExact);
        time_pair(
            s.tiny, "conv.wgrad tree", name,
            [&](float* dw) { cu::conv2d_backward_weight(x.f32(), dy.f32(), dw, tree); },
            p.co * p.ci * 9);
        if (!s.tiny) {
            // The exact mode's two ways (the large tile's cut programs two blocks a SM): the
            // per-sample leaves (the launcher's default way) and the fold into the limbs.
            const cu::ExactWgradWay way = cu::exact_wgrad_way();
            cu::set_exact_wgrad_way(cu::ExactWgradWay::kLeaves);
            time_pair(
                false, "conv.wgrad exact", name,
                [&](float* dw) { cu::conv2d_backward_weight(x.f32(), dy.f32(), dw, exact); },
                p.co * p.ci * 9);
            cu::set_exact_wgrad_way(way);
            time_pair(
                false, "conv.wgrad exact-limb-atomics", name,
                [&](float* dw) {
                    cu::conv2d_backward_weight_exact_limbs(x.f32(), dy.f32(), dw, exact);
                },
                p.co * p.ci * 9);
        }
        if (s.ci == 1) continue;  // a first layer has no dgrad
        // The transposed forward (the deterministic preset's dgrad on these 3x3 'same' shapes),
        // and the exact mode's (the same cut per tap, its large tile two blocks a SM: 64 KiB of
        // running doubles)
        time_pair(
            s.tiny, "conv.dgrad tree", name,
            [&](float* dx) { cu::conv2d_backward_data(dy.f32(), w.f32(), dx, tree); },
            p.n * p.ci * p.h * p.w);
        time_pair(
            s.tiny, "conv.dgrad exact", name,
            [&](float* dx) { cu::conv2d_backward_data(dy.f32(), w.f32(), dx, exact); },
            p.n * p.ci * p.h * p.w);
    }
    const std::string batch = std::to_string(n);
    const Tensor a = uniform({n, 1568}, 34), b = uniform({1568, 512}, 35);
    const kernels::GemmParams g{.m = n, .n = 512, .k = 1568};
    time_pair(
        false, "gemm", batch + "x1568 . 1568x512",
        [&](float* c) { cu::gemm(a.f32(), b.f32(), c, g); }, n * 512);
    // SmallCNN's fc1 forward (batch x 288 . (32 x 288)^T).
    const Tensor fx = uniform({n, 288}, 36), fw = uniform({32, 288}, 37);
    const kernels::GemmParams fc{.m = n, .n = 32, .k = 288, .trans_b = true};
    time_pair(
        true, "gemm", "smallcnn fc1 " + batch + "x288 . (32x288)^T",
        [&](float* c) { cu::gemm(fx.f32(), fw.f32(), c, fc); }, n * 32);
    cu::set_tile_choice(before);
}

}  // namespace dt::bench
