// SPDX-License-Identifier: MIT
// Every op, forward and backward, and the optimizer updates, on the cuda device against the cpu,
// bitwise, in every deterministic accumulation mode (tree, kahan, exact, permuted; atomic: close,
// since its bits are not fixed on either device). Run twice: on a stand-in cuda device (the CPU's
// kernels behind memory that faults on host access, tests/support/fake_cuda.h), which checks in
// CI that each op keeps its data on the device; and on a real CUDA device, which checks the CUDA
// kernels (skipped, saying so, on a machine without one). An op the CUDA table lacks fails here
// on a GPU with the DeviceError naming it: the list of what is missing is this test's output.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/add.h"
#include "engine/ops/attention.h"
#include "engine/ops/batchnorm2d.h"
#include "engine/ops/bias_add.h"
#include "engine/ops/conv2d.h"
#include "engine/ops/dropout.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gelu.h"
#include "engine/ops/init.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/linear.h"
#include "engine/ops/non_finite_scan.h"
#include "engine/ops/pool2d.h"
#include "engine/ops/relu.h"
#include "engine/ops/softmax_xent.h"
#include "engine/optim/clip.h"
#include "engine/optim/optimizer.h"
#include "engine/runtime/cuda_device.h"
#include "engine/runtime/exact_round.h"
#if DT_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif
#include "tests/support/compare.h"
#include "tests/support/device_ops.h"
#include "tests/support/exact_accs.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using namespace test;  // the DeviceOps fixture and its helpers (tests/support/device_ops.h)

TEST_P(DeviceOps, Elementwise) {
    const Tensor a = uniform({3, 5, 7}, 1), b = uniform({3, 5, 7}, 2);
    expect_device_equals_cpu([](const auto& in) { return add(in[0], in[1]); }, {a, b});
    expect_device_equals_cpu([](const auto& in) { return relu(in[0]); }, {a});
    expect_device_equals_cpu([](const auto& in) { return gelu(in[0]); }, {a});
    const Tensor x = uniform({4, 6, 5, 5}, 3), bias = uniform({6}, 4);
    expect_device_equals_cpu([](const auto& in) { return bias_add(in[0], in[1]); }, {x, bias});
    DropoutKey key{5, 2, 1, {9, 3, 100, 7}};
    expect_device_equals_cpu([&](const auto& in) { return dropout(in[0], 0.3f, true, key); }, {x});
}

TEST_P(DeviceOps, GradNormClipping) {
    // Three gradients over 1024-element chunks (the last partial), clipped to norm 2.
    const std::vector<Shape> shapes = {{3000}, {7, 5}, {1}};
    for (const AccumSpec& spec : test::all_mode_specs(13)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        std::vector<std::vector<float>> grads[2];
        float norms[2] = {0, 0};
        for (int d = 0; d < 2; ++d) {
            const ScopedReduceConfig modes(spec);
            std::vector<Tensor> params;
            for (std::size_t k = 0; k < shapes.size(); ++k) {
                Tensor p = uniform(shapes[k], 40 + static_cast<uint32_t>(k))
                               .to(d == 0 ? Device::kCpu : Device::kCuda);
                p.set_grad(uniform(shapes[k], 50 + static_cast<uint32_t>(k)).to(p.device()));
                params.push_back(p);
            }
            norms[d] = clip_grad_norm(params, 2.0f).to_vector()[0];
            for (const Tensor& p : params) grads[d].push_back(p.grad().to_vector());
        }
        if (spec.mode == AccumMode::kAtomic) {
            EXPECT_NEAR(norms[1], norms[0], 1e-5 * norms[0]);
            continue;
        }
        EXPECT_EQ(test::bits(norms[1]), test::bits(norms[0]));
        for (std::size_t k = 0; k < shapes.size(); ++k)
            EXPECT_TRUE(test::bitwise_equal(grads[1][k], grads[0][k])) << "gradient " << k;
    }
}

TEST_P(DeviceOps, WeightInit) {
    // Sizes around one block of the launch shape (256 threads) and many blocks.
    for (int64_t n : {1, 255, 257, 70001}) {
        Tensor on_cpu = Tensor::empty({n});
        Tensor on_device = Tensor::empty({n}, DType::kF32, Device::kCuda);
        init_uniform_(on_cpu, 0xfeed, 3, 0.25f);
        init_uniform_(on_device, 0xfeed, 3, 0.25f);
        EXPECT_TRUE(test::bitwise_equal(on_device.to_vector(), on_cpu.to_vector())) << n;
    }
}

TEST_P(DeviceOps, Conv2dAndLinear) {
    const Tensor x = uniform({4, 3, 9, 9}, 5), w = uniform({8, 3, 3, 3}, 6), b = uniform({8}, 7);
    for (Conv2dOptions o : {Conv2dOptions{1, 1}, Conv2dOptions{2, 0}}) {
        SCOPED_TRACE(o.stride);
        expect_device_equals_cpu([&](const auto& in) { return conv2d(in[0], in[1], in[2], o); },
                                 {x, w, b});
    }
    const Tensor xl = uniform({6, 40}, 8), wl = uniform({10, 40}, 9), bl = uniform({10}, 10);
    expect_device_equals_cpu([](const auto& in) { return linear(in[0], in[1], in[2]); },
                             {xl, wl, bl});
}

TEST_P(DeviceOps, PerChannelTotalsOverLongRows) {
    // Rows long enough for the staged leaves (kernels/cuda/channel_leaves_staged.h): batch
    // norm's 40 rows of 289 positions (two blocks, three chunks, the last partial) and
    // bias.grad's 33 rows of 169 (two blocks, two chunks).
    const Tensor x = uniform({5, 8, 17, 17}, 21, -3.0f, 5.0f), g = uniform({8}, 22),
                 be = uniform({8}, 23);
    expect_device_equals_cpu(
        [&](const auto& in) {
            Tensor rm = Tensor::zeros({8}, DType::kF32, in[0].device()),
                   rv = Tensor::full({8}, 1.0f, in[0].device());
            return batchnorm2d(in[0], in[1], in[2], rm, rv, {true, 0.1f, 1e-5f});
        },
        {x, g, be});
    const Tensor xb = uniform({3, 11, 13, 13}, 24), b = uniform({11}, 25);
    expect_device_equals_cpu([](const auto& in) { return bias_add(in[0], in[1]); }, {xb, b});
}

TEST_P(DeviceOps, CausalAttention) {
    // T = 70: three key and query blocks, the last ones partial; two heads of 5.
    const Tensor qkv = uniform({2, 70, 30}, 26, -2.0f, 2.0f);
    expect_device_equals_cpu([](const auto& in) { return causal_attention(in[0], 2); }, {qkv});
}

TEST_P(DeviceOps, CausalAttentionRowsOfAKvCache) {
    // One sequence in a buffer of 70 tokens: queries 33 .. 59 over keys 0 .. t, against the rows
    // of the whole forward on the cpu (tokens 60 .. 69 are not read: garbage there changes
    // nothing). Every mode but atomic, whose leaves race on a GPU.
    Tensor qkv = uniform({1, 70, 30}, 27, -2.0f, 2.0f);
    const autograd::NoGradGuard no_grad;
    for (const AccumSpec& spec : test::all_mode_specs(11)) {
        if (spec.mode == AccumMode::kAtomic) continue;
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        std::vector<float> want;
        {
            const ScopedReduceConfig config(spec);
            const std::vector<float> all = causal_attention(qkv, 2).to_vector();
            want.assign(all.begin() + 33 * 10, all.begin() + 60 * 10);
        }
        std::vector<float> dirty = qkv.to_vector();
        for (std::size_t i = 60 * 30; i < dirty.size(); ++i) dirty[i] = 1e30f;
        const ScopedReduceConfig config(spec);
        const Tensor got = causal_attention_rows(
            Tensor::from_vector({1, 70, 30}, dirty).to(Device::kCuda), 2, 33, 60);
        ASSERT_EQ(got.shape(), (Shape{1, 27, 10}));
        EXPECT_EQ(got.to_vector(), want);
    }
}

TEST_P(DeviceOps, BatchNormInTrainingAndEvaluation) {
    const Tensor x = uniform({5, 4, 6, 6}, 11, -3.0f, 5.0f), g = uniform({4}, 12),
                 be = uniform({4}, 13);
    for (bool training : {true, false}) {
        SCOPED_TRACE(training);
        std::vector<std::vector<float>> stats;  // running statistics after the op, per device
        expect_device_equals_cpu(
            [&](const auto& in) {
                Tensor rm = uniform({4}, 14).to(in[0].device()),
                       rv = uniform({4}, 15, 0.5f, 2.0f).to(in[0].device());
                Tensor y = batchnorm2d(in[0], in[1], in[2], rm, rv, {training, 0.1f, 1e-5f});
                stats.push_back(rm.to_vector());
                stats.push_back(rv.to_vector());
                return y;
            },
            {x, g, be});
        // cpu then cuda for each of the five modes: the running statistics agree pairwise.
        for (std::size_t i = 0; i + 3 < stats.size(); i += 4) {
            if (i / 4 == 4) break;  // atomic
            EXPECT_EQ(stats[i], stats[i + 2]);
            EXPECT_EQ(stats[i + 1], stats[i + 3]);
        }
    }
}

TEST_P(DeviceOps, EmbeddingOfTokensAndPositions) {
    // Byte-like tokens (a few ids take most rows, many none) and learned positions (ids = t):
    // B = 16 sequences of T = 24, C = 12. The ids go to the table's device, or stay on the host.
    const int64_t B = 16, T = 24, C = 12;
    std::vector<int64_t> tok, pos;
    for (float u : test::uniform_floats(B * T, 0, 1, test::test_seed(), 26))
        tok.push_back(static_cast<int64_t>(256.0f * u * u * u));
    for (int64_t m = 0; m < B * T; ++m) pos.push_back(m % T);
    for (const auto& [ids, V] : {std::pair{tok, int64_t{256}}, std::pair{pos, T}}) {
        const Tensor host_ids = Tensor::from_vector_i64({B, T}, ids);
        expect_device_equals_cpu(
            [&](const auto& in) { return embedding(host_ids.to(in[0].device()), in[0], T); },
            {uniform({V, C}, 27)});
        expect_device_equals_cpu([&](const auto& in) { return embedding(host_ids, in[0], T); },
                                 {uniform({V, C}, 28)});
    }
}

TEST_P(DeviceOps, LayerNorm) {
    // C = 1; odd C below 32 over sequences of 5 tokens; GPT-2's C (32 leaves of 24) with a last
    // block of tokens the row programs take partly.
    for (const auto& [B, T, C] : {std::array<int64_t, 3>{2, 3, 1}, std::array<int64_t, 3>{3, 5, 7},
                                  std::array<int64_t, 3>{3, 7, 768}}) {
        SCOPED_TRACE(testing::Message() << B << "x" << T << "x" << C);
        const Tensor x = uniform({B, T, C}, 26, -3.0f, 5.0f), g = uniform({C}, 27, 0.5f, 1.5f),
                     be = uniform({C}, 28);
        expect_device_equals_cpu(
            [T = T](const auto& in) { return layer_norm(in[0], in[1], in[2], T); }, {x, g, be});
    }
}

TEST_P(DeviceOps, Pooling) {
    const Tensor x = uniform({3, 4, 9, 9}, 16);
    for (Pool2dOptions o : {Pool2dOptions{2, 2, 0}, Pool2dOptions{3, 2, 1}}) {
        SCOPED_TRACE(o.kernel);
        expect_device_equals_cpu([&](const auto& in) { return maxpool2d(in[0], o); }, {x});
        expect_device_equals_cpu([&](const auto& in) { return relu_maxpool2d(in[0], o); }, {x});
        expect_device_equals_cpu([&](const auto& in) { return avgpool2d(in[0], o); }, {x});
    }
    expect_device_equals_cpu([](const auto& in) { return global_avgpool(in[0]); }, {x});
}

TEST_P(DeviceOps, LossArgmaxAndTheNonFiniteScan) {
    const Tensor logits = uniform({9, 10}, 17, -4.0f, 4.0f);
    const Tensor labels = Tensor::from_vector_i64({9}, {0, 3, 9, 2, 2, 5, 7, 1, 4});
    expect_device_equals_cpu(
        [&](const auto& in) { return softmax_cross_entropy(in[0], labels.to(in[0].device())); },
        {logits});
    // Labels on the host with logits on the device (the trainer's way): the same loss.
    EXPECT_EQ(softmax_cross_entropy(logits.to(Device::kCuda), labels).item(),
              softmax_cross_entropy(logits, labels).item());
    EXPECT_EQ(argmax_rows(logits.to(Device::kCuda)), argmax_rows(logits));
    std::vector<float> v = logits.to_vector();
    EXPECT_EQ(first_non_finite(Tensor::from_vector({90}, v).to(Device::kCuda)), -1);
    v[61] = NAN, v[80] = INFINITY;
    EXPECT_EQ(first_non_finite(Tensor::from_vector({90}, v).to(Device::kCuda)), 61);
    // The batched scan: one answer per tensor, in one wait for the device.
    const std::vector<Tensor> ts = {Tensor::from_vector({90}, v).to(Device::kCuda),
                                    logits.to(Device::kCuda),
                                    Tensor::from_vector({3, 30}, v).to(Device::kCuda)};
    EXPECT_EQ(first_non_finite_each(ts), (std::vector<int64_t>{61, -1, 61}));
    EXPECT_THROW(first_non_finite_each(std::vector<Tensor>{ts[0], logits}), DeviceError);
    // The tape's way: each tensor scanned when added and freed at once, the answers at the end,
    // past the first capacity of answer words (grown on the device with the queued answers).
    NonFiniteScan scan(Device::kCuda);
    for (int k = 0; k < 600; ++k) {
        std::vector<float> w(static_cast<std::size_t>(7 + k % 5), 0.5f);
        if (k % 7 == 3) w[static_cast<std::size_t>(k % 4)] = k % 2 ? -INFINITY : -NAN;
        EXPECT_EQ(scan.add(Tensor::from_vector({std::ssize(w)}, w).to(Device::kCuda)),
                  static_cast<std::size_t>(k));
    }
    const std::vector<NonFiniteAt> found = scan.results();
    ASSERT_EQ(found.size(), 600u);
    for (int k = 0; k < 600; ++k) {
        SCOPED_TRACE(k);
        EXPECT_EQ(found[k].index, k % 7 == 3 ? k % 4 : -1);
        if (k % 7 != 3) continue;
        EXPECT_TRUE(std::signbit(found[k].value));
        EXPECT_EQ(std::isnan(found[k].value), k % 2 == 0);
    }
}

// A split batch's exact gradients rounded where their accumulators are (engine/runtime/
// exact_round.h): the cpu's bits, without the accumulators coming to the host.
TEST_P(DeviceOps, ExactAccumulatorsRoundOnTheDevice) {
    const std::vector<kernels::common::ExactAcc> accs = test::random_exact_accs(1000, 31);
    std::vector<int64_t> words(accs.size() * kExactAccWords);
    std::memcpy(words.data(), accs.data(), words.size() * sizeof(int64_t));
    const Tensor host = Tensor::from_vector_i64({static_cast<int64_t>(words.size())}, words);
    const Tensor want = round_exact(host, {10, 100});
    const Tensor got = round_exact(host.to(Device::kCuda), {10, 100});
    EXPECT_EQ(got.device(), Device::kCuda);
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(test::bitwise_equal(got.to_vector(), want.to_vector()));
}

TEST_P(DeviceOps, OptimizerUpdates) {
    for (const char* kind : {"sgd", "adam", "adamw"}) {
        SCOPED_TRACE(kind);
        OptimizerConfig cfg;
        cfg.kind = kind, cfg.momentum = 0.9f, cfg.nesterov = true, cfg.weight_decay = 0.01f;
        std::vector<std::vector<float>> result[2];
        for (Device d : {Device::kCpu, Device::kCuda}) {
            Tensor p = uniform({300}, 18).to(d).clone();
            p.set_requires_grad(true);
            std::unique_ptr<Optimizer> opt = make_optimizer(cfg, {p});
            for (uint32_t step = 0; step < 3; ++step) {
                p.set_grad(uniform({300}, 19 + step).to(d));
                opt->step(0.01f);
            }
            auto& r = result[d == Device::kCuda];
            r.push_back(p.to_vector());
            for (auto& [name, t] : opt->state())
                if (t.dtype() == DType::kF32) r.push_back(t.to_vector());
        }
        ASSERT_EQ(result[0].size(), result[1].size());
        for (std::size_t k = 0; k < result[0].size(); ++k)
            EXPECT_TRUE(test::bitwise_equal(result[1][k].data(), result[0][k].data(),
                                            static_cast<int64_t>(result[0][k].size())));
    }
}

TEST(NonFiniteScanOnADevice, IssuesSixteenTensorsPerKernelCall) {
    // On a device the scans go kScanBatch at a time (one launch on a GPU), the rest at results();
    // the answers are those of scans issued one by one.
    const test::ScopedFakeCuda device;
    NonFiniteScan scan(Device::kCuda);
    const std::size_t before = test::ScopedFakeCuda::kernel_calls();
    for (int k = 0; k < 40; ++k) {
        std::vector<float> w(static_cast<std::size_t>(3 + k), 1.0f);
        if (k == 17 || k == 39) w[2] = k == 17 ? NAN : -INFINITY;
        scan.add(Tensor::from_vector({std::ssize(w)}, w).to(Device::kCuda));
    }
    EXPECT_EQ(test::ScopedFakeCuda::kernel_calls() - before, 2u);  // 16 and 32 reached
    const std::vector<NonFiniteAt> found = scan.results();
    EXPECT_EQ(test::ScopedFakeCuda::kernel_calls() - before, 3u);  // the last 8
    for (int k = 0; k < 40; ++k) EXPECT_EQ(found[k].index, k == 17 || k == 39 ? 2 : -1) << k;
    EXPECT_TRUE(std::isnan(found[17].value));
    EXPECT_EQ(found[39].value, -INFINITY);
}

TEST(CudaDevicePoison, AReusedTensorBlockReadsAsNaN) {
    // DT_CUDA_POISON=1 (kernels/cuda/runtime.h): a block the device memory hands out again is
    // all-ones bytes, not the values its last tensor left (scripts/emulate.sh sets it for a run).
    std::string why;
    if (!cuda_device::available(&why)) GTEST_SKIP() << why;
    if (!cuda_device::kernel_ways().poison) GTEST_SKIP() << "DT_CUDA_POISON=1 is not set";
    const Shape shape{1000, 3};
    { const Tensor zeros = Tensor::zeros(shape, DType::kF32, Device::kCuda); }
    const std::vector<float> got = Tensor::empty(shape, DType::kF32, Device::kCuda).to_vector();
    std::size_t ones = 0;
    for (float x : got) ones += std::bit_cast<uint32_t>(x) == 0xffffffffu;
    EXPECT_EQ(ones, got.size());
}

INSTANTIATE_TEST_SUITE_P(Device, DeviceOps, ::testing::Values(Stand::kFake, Stand::kCuda),
                         [](const auto& info) {
                             return std::string(info.param == Stand::kFake ? "StandIn" : "Cuda");
                         });

}  // namespace
}  // namespace dt
