// SPDX-License-Identifier: MIT
// Every op, forward and backward, and the optimizer updates, on the cuda device against the cpu,
// bitwise, in every deterministic accumulation mode (tree, kahan, exact, permuted; atomic: close,
// since its bits are not fixed on either device). Run twice: on a stand-in cuda device (the CPU's
// kernels behind memory that faults on host access, tests/support/fake_cuda.h), which checks in
// CI that each op keeps its data on the device; and on a real CUDA device, which checks the CUDA
// kernels (skipped, saying so, on a machine without one). An op the CUDA table lacks fails here
// on a GPU with the DeviceError naming it: the list of what is missing is this test's output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/add.h"
#include "engine/ops/batchnorm2d.h"
#include "engine/ops/bias_add.h"
#include "engine/ops/conv2d.h"
#include "engine/ops/dropout.h"
#include "engine/ops/init.h"
#include "engine/ops/linear.h"
#include "engine/ops/non_finite_scan.h"
#include "engine/ops/pool2d.h"
#include "engine/ops/relu.h"
#include "engine/ops/softmax_xent.h"
#include "engine/optim/optimizer.h"
#include "engine/runtime/cuda_device.h"
#include "engine/runtime/exact_round.h"
#if DT_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif
#include "tests/support/compare.h"
#include "tests/support/exact_accs.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using kernels::common::AccumMode;
using kernels::common::AccumSpec;

enum class Stand { kFake, kCuda };

class DeviceOps : public ::testing::TestWithParam<Stand> {
 protected:
    void SetUp() override {
        if (GetParam() == Stand::kFake) {
            fake_ = std::make_unique<test::ScopedFakeCuda>();
            return;
        }
        std::string why;
        if (!cuda_device::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    }
    void TearDown() override {
        autograd::clear_tape();
        if (GetParam() == Stand::kCuda && cuda_device::available()) cuda_device::check();
    }
    std::unique_ptr<test::ScopedFakeCuda> fake_;
};

Tensor uniform(const Shape& shape, uint32_t tag, float lo = -1.0f, float hi = 1.0f) {
    return Tensor::from_vector(
        shape, test::uniform_floats(shape_numel(shape), lo, hi, test::test_seed(), tag));
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

/// The op's output and the gradients of its inputs for a fixed dy, on device d, on the host, with
/// every reduction site in mode `spec` (call counters from 0: permuted keys each call's order).
std::vector<std::vector<float>> run_op(Device d, const AccumSpec& spec, const Op& op,
                                       const std::vector<Tensor>& inputs) {
    const ScopedReduceConfig modes(spec);
    std::vector<Tensor> on;
    for (const Tensor& t : inputs) {
        Tensor x = t.to(d).clone();
        if (x.dtype() == DType::kF32) x.set_requires_grad(true);
        on.push_back(x);
    }
    const Tensor y = op(on);
    std::vector<std::vector<float>> out = {y.to_vector()};
    if (y.impl().grad_fn) {
        const Tensor dy = uniform(y.shape(), 77).to(d);
        for (const Tensor& g : y.impl().grad_fn->backward(dy))
            out.push_back(g.defined() ? g.to_vector() : std::vector<float>{});
    }
    autograd::clear_tape();
    return out;
}

/// op on the cuda device equals op on the cpu: bitwise in every deterministic mode, within
/// `atomic_tol` (relative to the largest magnitude) under atomic.
void expect_device_equals_cpu(const Op& op, const std::vector<Tensor>& inputs,
                              double atomic_tol = 1e-5) {
    for (const AccumSpec& spec : test::all_mode_specs(11)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const auto want = run_op(Device::kCpu, spec, op, inputs);
        const auto got = run_op(Device::kCuda, spec, op, inputs);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < want.size(); ++k) {
            SCOPED_TRACE(k == 0 ? std::string("output")
                                : "gradient of input " + std::to_string(k - 1));
            ASSERT_EQ(got[k].size(), want[k].size());
            const auto n = static_cast<int64_t>(want[k].size());
            if (spec.mode != AccumMode::kAtomic) {
                EXPECT_TRUE(test::bitwise_equal(got[k].data(), want[k].data(), n));
                continue;
            }
            double scale = 0;
            for (float v : want[k]) scale = std::max(scale, std::fabs(double(v)));
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(got[k][i], want[k][i], atomic_tol * (scale + 1e-30)) << "at " << i;
        }
    }
}

TEST_P(DeviceOps, Elementwise) {
    const Tensor a = uniform({3, 5, 7}, 1), b = uniform({3, 5, 7}, 2);
    expect_device_equals_cpu([](const auto& in) { return add(in[0], in[1]); }, {a, b});
    expect_device_equals_cpu([](const auto& in) { return relu(in[0]); }, {a});
    const Tensor x = uniform({4, 6, 5, 5}, 3), bias = uniform({6}, 4);
    expect_device_equals_cpu([](const auto& in) { return bias_add(in[0], in[1]); }, {x, bias});
    DropoutKey key{5, 2, 1, {9, 3, 100, 7}};
    expect_device_equals_cpu([&](const auto& in) { return dropout(in[0], 0.3f, true, key); }, {x});
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

TEST_P(DeviceOps, ConvExactWgradWithLimbAtomics) {
    // DT_CUDA_EXACT_WGRAD=limbs's way on a GPU (kernels/cuda/runtime.h: a group of samples'
    // chains folded per weight, added into the accumulators' limbs with integer atomics): the
    // exact mode's bits, the cpu's.
    // (The stand-in runs the cpu's kernels: there the way changes nothing.)
#if DT_WITH_CUDA
    namespace kc = kernels::cuda;
    kc::set_exact_wgrad_way(kc::ExactWgradWay::kLimbAtomics);
    struct Restore {  // the default way for the tests after this one, whatever happens here
        ~Restore() { kc::set_exact_wgrad_way(kc::ExactWgradWay::kLeaves); }
    } restore;
#endif
    const Tensor x = uniform({6, 3, 7, 7}, 14), w = uniform({5, 3, 3, 3}, 15);
    const AccumSpec exact = kernels::common::accum_spec(AccumMode::kExact);
    for (Conv2dOptions o : {Conv2dOptions{1, 1}, Conv2dOptions{2, 0}}) {
        SCOPED_TRACE(o.stride);
        const Op op = [&](const auto& in) { return conv2d(in[0], in[1], Tensor(), o); };
        const auto want = run_op(Device::kCpu, exact, op, {x, w});
        const auto got = run_op(Device::kCuda, exact, op, {x, w});
        ASSERT_GE(got.size(), 3u);  // y, dx, dw
        EXPECT_TRUE(test::bitwise_equal(got[2], want[2])) << "the weight gradient";
    }
    // Enough tiles that a block folds several samples (wgrad_fold_group on a GPU of 132 SMs: 16
    // with the small tile, 8 with the large; more on smaller ones), the samples 2^-20 .. 2^20
    // apart, so that the running doubles move: the fold's moves and atomics on a GPU, with every
    // tile shape (the large one: 108 KiB of dynamic shared memory, two blocks a SM).
    std::vector<float> xs = test::signed_uniform(64 * 256 * 4 * 4, 16);
    for (std::size_t i = 0; i < xs.size(); ++i)
        xs[i] = std::ldexp(xs[i], static_cast<int>(i / (256 * 16) * 13 % 41) - 20);
    const Tensor xg = Tensor::from_vector({64, 256, 4, 4}, xs), wg = uniform({512, 256, 3, 3}, 17);
    const Op op = [](const auto& in) {
        return conv2d(in[0], in[1], Tensor(), Conv2dOptions{1, 1});
    };
    const auto want = run_op(Device::kCpu, exact, op, {xg, wg});
#if DT_WITH_CUDA
    struct RestoreTiles {  // the automatic choice for the tests after this one
        ~RestoreTiles() { kc::set_tile_choice(kc::TileChoice::kAuto); }
    } restore_tiles;
    std::vector<kc::TileChoice> tiles = {kc::TileChoice::kAuto};
    if (GetParam() == Stand::kCuda)  // (the stand-in runs the cpu's kernels: once is enough)
        tiles.insert(tiles.end(), {kc::TileChoice::kLarge, kc::TileChoice::kSmall});
    for (const kc::TileChoice tile : tiles) {
        kc::set_tile_choice(tile);
        SCOPED_TRACE(testing::Message() << "tile choice " << static_cast<int>(tile));
#endif
        const auto got = run_op(Device::kCuda, exact, op, {xg, wg});
        ASSERT_GE(got.size(), 3u);
        EXPECT_TRUE(test::bitwise_equal(got[2], want[2])) << "the weight gradient, folded samples";
#if DT_WITH_CUDA
    }
#endif
}

TEST_P(DeviceOps, ConvExactDgradCutPerTap) {
    // conv.dgrad's exact mode on a 3x3 'same' layer (kernels/cuda/conv2d_dgrad_tiled_bodies.h:
    // the transposed forward cut per tap, each element's tap values folded in double): with the
    // first tap's weights scaled by 2^-60 and the last's by 2^50 (the fold is not exact: those
    // elements computed again) and with an infinite weight (infinite and NaN values; NaN pieces
    // where its tap has no output position): the cpu's bits, with every tile shape.
    std::vector<float> ws = test::signed_uniform(12 * 16 * 9, 18);
    for (std::size_t i = 0; i < ws.size(); ++i)
        ws[i] = std::ldexp(ws[i], i % 9 == 0 ? -60 : i % 9 == 8 ? 50 : 0);
    const Tensor x = uniform({4, 16, 6, 6}, 19);
    const AccumSpec exact = kernels::common::accum_spec(AccumMode::kExact);
    const Op op = [](const auto& in) {
        return conv2d(in[0], in[1], Tensor(), Conv2dOptions{1, 1});
    };
    // Every tile shape (the large one: dynamic shared memory, two blocks a SM), where these few
    // tiles would take the tiny one.
#if DT_WITH_CUDA
    namespace kc = kernels::cuda;
    struct Restore {  // the automatic choice for the tests after this one, whatever happens here
        ~Restore() { kc::set_tile_choice(kc::TileChoice::kAuto); }
    } restore;
    const kc::TileChoice tiles[] = {kc::TileChoice::kAuto, kc::TileChoice::kLarge,
                                    kc::TileChoice::kSmall};
#else
    const int tiles[] = {0};  // (the stand-in runs the cpu's kernels)
#endif
    for (const auto tile : tiles) {
#if DT_WITH_CUDA
        kc::set_tile_choice(tile);
#endif
        SCOPED_TRACE(testing::Message() << "tile choice " << static_cast<int>(tile));
        for (const bool with_inf : {false, true}) {
            SCOPED_TRACE(with_inf ? "an infinite weight" : "taps far apart");
            std::vector<float> w = ws;
            if (with_inf) w[9 * 5 + 4] = INFINITY;
            const Tensor wt = Tensor::from_vector({12, 16, 3, 3}, w);
            const auto want = run_op(Device::kCpu, exact, op, {x, wt});
            const auto got = run_op(Device::kCuda, exact, op, {x, wt});
            ASSERT_GE(got.size(), 2u);  // y, dx
            EXPECT_TRUE(test::bitwise_equal(got[1], want[1])) << "the input gradient";
        }
    }
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

INSTANTIATE_TEST_SUITE_P(Device, DeviceOps, ::testing::Values(Stand::kFake, Stand::kCuda),
                         [](const auto& info) {
                             return std::string(info.param == Stand::kFake ? "StandIn" : "Cuda");
                         });

}  // namespace
}  // namespace dt
