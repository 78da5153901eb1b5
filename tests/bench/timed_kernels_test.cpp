// SPDX-License-Identifier: MIT
// bench/roofline: the timed kernel table changes no bit of a training step and describes every
// convolution and linear call (useful work, operands, the site's mode); the FMA ceiling is
// measured where the CPU has the width.
#include "bench/roofline/timed_kernels.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/roofline/fma_peak.h"
#include "bench/trainee.h"
#include "engine/autograd/tape.h"
#include "engine/ops/conv2d.h"
#include "engine/runtime/isa.h"

namespace dt::bench {
namespace {

std::vector<std::vector<float>> weights(const Trainee& t) {
    std::vector<std::vector<float>> out;
    for (const Tensor& w : t.model->trainable()) out.push_back(w.to_vector());
    return out;
}

TEST(TimedCpuKernels, AStepKeepsItsBitsAndEveryLayerIsDescribed) {
    const Shape& shape = kTrainStepShapes[0];  // smallcnn
    ASSERT_EQ(shape_name(shape), "smallcnn");
    const ScopedReduceConfig specs(preset_specs("deterministic"));
    Trainee plain(shape), timed(shape);
    plain.step();
    std::vector<KernelCall> calls;
    {
        TimedCpuKernels table;
        timed.step();
        calls = table.take();
    }
    EXPECT_EQ(weights(plain), weights(timed));
    int forward = 0, wgrad = 0;
    for (const KernelCall& c : calls) {
        EXPECT_GE(c.seconds, 0.0);
        if (c.id == kernels::KernelId::conv2d_forward) {
            ++forward;
            EXPECT_GT(c.flops, 0.0);
            EXPECT_GT(c.bytes, 0.0);
            EXPECT_TRUE(c.mode.empty()) << c.layer;
        }
        if (c.id == kernels::KernelId::conv2d_backward_weight) {
            ++wgrad;
            EXPECT_EQ(c.mode, "tree") << c.layer;
        }
    }
    EXPECT_EQ(forward, 3);
    EXPECT_EQ(wgrad, 3);
}

TEST(TimedCpuKernels, PaddingTapsAreNotWork) {
    // A 3x3 'same' convolution on a 1x1 map: only the centre tap reads the image.
    const autograd::NoGradGuard no_grad;
    const Tensor x = Tensor::full({4, 5, 1, 1}, 1.0f), w = Tensor::full({6, 5, 3, 3}, 1.0f);
    TimedCpuKernels table;
    conv2d(x, w, Tensor(), Conv2dOptions{1, 1});
    const std::vector<KernelCall> calls = table.take();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].layer, "4x5x1x1>6 k3x3/1");
    EXPECT_EQ(calls[0].flops, 2.0 * 4 * 6 * 5);
    EXPECT_EQ(calls[0].bytes, 4.0 * (4 * 5 + 6 * 5 * 9 + 4 * 6));
}

TEST(FmaPeak, MeasuresTheWidthsThisCpuHas) {
    const bool avx2 = cpu_isa_supported(CpuIsa::kAvx2);
    const bool avx512 = cpu_isa_supported(CpuIsa::kAvx512);
    EXPECT_EQ(fma_peak_gflops(256, 1, 0.02) > 0.0, avx2);
    EXPECT_EQ(fma_peak_gflops(512, 1, 0.02) > 0.0, avx512);
    EXPECT_EQ(fma_peak_gflops(64, 1, 0.02), 0.0);  // no such width
}

}  // namespace
}  // namespace dt::bench
