// SPDX-License-Identifier: MIT
// The per-device kernel tables (kernels/kernel_table.h, engine/core/backend.h): the CPU table is
// complete; a recording backend (every entry counts its calls, then runs the CPU kernel) serves
// the CPU device while every op of kernels/op_list.inc runs forward and backward, and each op must
// have called every entry the list files under it, so no op reaches a kernel but through the
// table of its tensors' device; an entry a table leaves empty, and a device without a backend,
// are DeviceErrors that say what is missing.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/backend.h"
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
#include "tests/support/autograd_util.h"
#include "tests/support/errors.h"

namespace dt {
namespace {

using kernels::KernelId;
using kernels::KernelTable;
using kernels::OpKind;

std::array<int, kernels::kNumKernels> g_calls{};

/// Entry K of the recording table: counts the call, then runs the CPU table's entry.
template <KernelId K, auto Member, typename F>
struct Recorder;
template <KernelId K, auto Member, typename R, typename... A>
struct Recorder<K, Member, R (*)(A...)> {
    static R call(A... a) {
        ++g_calls[static_cast<std::size_t>(K)];
        return (kernels::cpu::kernel_table().*Member)(a...);
    }
};

KernelTable recording_table() {
    KernelTable t;
    t.device = "recording";
#define DT_KERNEL(op, entry) \
    t.entry = &Recorder<KernelId::entry, &KernelTable::entry, decltype(t.entry)>::call;
#include "kernels/op_list.inc"
    return t;
}

Tensor param(const Shape& s, uint32_t tag) { return test::random_param(s, 7, tag); }

/// Runs op forward and backward (a loss = sum of weighted outputs) on small inputs.
void run_op(OpKind op) {
    const Tensor x4 = param({2, 3, 6, 6}, 1);
    auto backward_of = [](const Tensor& y) {
        test::weighted_sum(y, test::uniform_floats(y.numel(), -1, 1, 3, 9)).backward();
    };
    switch (op) {
        case OpKind::add:
            backward_of(add(x4, param(x4.shape(), 2)));
            break;
        case OpKind::relu:
            backward_of(relu(x4));
            break;
        case OpKind::gelu:
            backward_of(gelu(x4));
            break;
        case OpKind::bias_add:
            backward_of(bias_add(x4, param({3}, 3)));
            break;
        case OpKind::dropout: {
            DropoutKey key;
            key.sample_ids = {4, 9};
            backward_of(dropout(x4, 0.5f, true, key));
            break;
        }
        case OpKind::init_uniform: {
            Tensor w = Tensor::empty({5, 7});
            init_uniform_(w, 3, 1, 0.5f);
            break;
        }
        case OpKind::linear:
            backward_of(linear(param({4, 5}, 4), param({3, 5}, 5), param({3}, 6)));
            break;
        case OpKind::conv2d:
            backward_of(conv2d(x4, param({4, 3, 3, 3}, 7), param({4}, 8), {.padding = 1}));
            break;
        case OpKind::batchnorm2d: {
            Tensor mean = Tensor::zeros({3}), var = Tensor::full({3}, 1.0f);
            backward_of(batchnorm2d(x4, param({3}, 9), param({3}, 10), mean, var, {}));
            backward_of(
                batchnorm2d(x4, param({3}, 9), param({3}, 10), mean, var, {.training = false}));
            break;
        }
        case OpKind::embedding:
            backward_of(embedding(Tensor::from_vector_i64({2, 3}, {4, 0, 4, 1, 1, 2}),
                                  param({5, 4}, 16), 3));
            break;
        case OpKind::attention:
            backward_of(causal_attention(param({2, 5, 12}, 13), 2));
            break;
        case OpKind::layer_norm:
            backward_of(layer_norm(param({2, 3, 5}, 13), param({5}, 14), param({5}, 15), 3));
            break;
        case OpKind::maxpool2d:
            backward_of(maxpool2d(x4));
            break;
        case OpKind::relu_maxpool2d:
            backward_of(relu_maxpool2d(x4));
            break;
        case OpKind::avgpool2d:
            backward_of(avgpool2d(x4, {.kernel = 3, .stride = 2, .padding = 1}));
            break;
        case OpKind::global_avgpool:
            backward_of(global_avgpool(x4));
            break;
        case OpKind::softmax_cross_entropy:
            softmax_cross_entropy(param({2, 4}, 11), Tensor::from_vector_i64({2}, {3, 0}))
                .backward();
            break;
        case OpKind::argmax_rows:
            EXPECT_EQ(argmax_rows(param({3, 4}, 12)).size(), 3u);
            break;
        case OpKind::sgd:
        case OpKind::adam: {
            Tensor p = test::param({1.0f, -2.0f, 3.0f});
            test::set_grad(p, {0.5f, 0.25f, -1.0f});
            OptimizerConfig cfg;
            cfg.kind = op == OpKind::sgd ? "sgd" : "adamw";
            cfg.momentum = 0.9f;
            make_optimizer(cfg, {p})->step(0.1f);
            break;
        }
        case OpKind::grad_norm: {
            Tensor p = test::param({3.0f, -4.0f});
            test::set_grad(p, {3.0f, -4.0f});
            EXPECT_EQ(clip_grad_norm({p}, 1.0f).to_vector(), std::vector<float>{25.0f});
            break;
        }
        case OpKind::exact_round: {
            Tensor accs = Tensor::zeros({3 * kExactAccWords}, DType::kI64);
            EXPECT_EQ(round_exact(accs, {3}).to_vector(), (std::vector<float>{0, 0, 0}));
            break;
        }
        case OpKind::non_finite_scan:
            EXPECT_EQ(first_non_finite(x4), -1);
            EXPECT_EQ(first_non_finite_each(std::vector<Tensor>{x4, x4}),
                      (std::vector<int64_t>{-1, -1}));
            break;
    }
}

TEST(KernelTable, CpuTableFillsEveryEntry) {
    const KernelTable& t = kernels::cpu::kernel_table();
    std::vector<std::string> empty;
#define DT_KERNEL(op, entry) \
    if (t.entry == nullptr) empty.push_back(#entry);
#include "kernels/op_list.inc"
    EXPECT_TRUE(empty.empty()) << empty.front();
    EXPECT_STREQ(t.device, "cpu");
    EXPECT_EQ(&device_kernels(Device::kCpu), &t);
}

TEST(KernelTable, EveryOpCallsItsKernelsThroughTheTableOfItsDevice) {
    const ScopedKernelTable recording(Device::kCpu, recording_table());
    ASSERT_STREQ(device_kernels(Device::kCpu).device, "recording");
    std::array<int, kernels::kNumKernels> total{};
    for (int o = 0; o < kernels::kNumOps; ++o) {
        const auto op = static_cast<OpKind>(o);
        SCOPED_TRACE(kernels::op_name(op));
        g_calls.fill(0);
        run_op(op);
        int calls = 0;
        for (int k = 0; k < kernels::kNumKernels; ++k) {
            calls += g_calls[static_cast<std::size_t>(k)];
            total[static_cast<std::size_t>(k)] += g_calls[static_cast<std::size_t>(k)];
            if (kernels::kernel_op(static_cast<KernelId>(k)) == op) {
                EXPECT_GT(g_calls[static_cast<std::size_t>(k)], 0)
                    << kernels::kernel_name(static_cast<KernelId>(k)) << " was not called";
            }
        }
        EXPECT_GT(calls, 0) << "no kernel went through the table";
    }
    // Ops that list no entry of their own use others': relu_maxpool2d, and conv2d/linear's bias.
    g_calls.fill(0);
    run_op(OpKind::relu_maxpool2d);
    for (KernelId k : {KernelId::maxpool2d_forward, KernelId::relu_forward, KernelId::relu_backward,
                       KernelId::maxpool2d_backward})
        EXPECT_GT(g_calls[static_cast<std::size_t>(k)], 0) << kernels::kernel_name(k);
    g_calls.fill(0);
    run_op(OpKind::conv2d);
    EXPECT_GT(g_calls[static_cast<std::size_t>(KernelId::bias_add_backward)], 0);
    for (int k = 0; k < kernels::kNumKernels; ++k)
        EXPECT_GT(total[static_cast<std::size_t>(k)], 0)
            << kernels::kernel_name(static_cast<KernelId>(k)) << ": no op reached it";
}

TEST(KernelTable, TheTapeAccumulatesThroughTheTable) {
    const ScopedKernelTable recording(Device::kCpu, recording_table());
    g_calls.fill(0);
    const Tensor x = param({8}, 13);
    test::weighted_sum(add(relu(x), relu(x)), std::vector<float>(8, 1.0f)).backward();
    // x receives two contributions (one per relu): the second is added by the add kernel.
    EXPECT_EQ(g_calls[static_cast<std::size_t>(KernelId::add_forward)], 2);
    EXPECT_EQ(g_calls[static_cast<std::size_t>(KernelId::relu_backward)], 2);
}

TEST(KernelTable, AnEntryTheTableLacksIsADeviceErrorNamingIt) {
    KernelTable partial = kernels::cpu::kernel_table();
    partial.conv2d_backward_weight = nullptr;
    const ScopedKernelTable scoped(Device::kCpu, partial);
    const Tensor x = param({1, 2, 5, 5}, 14), w = param({3, 2, 3, 3}, 15);
    const Tensor y = conv2d(x, w, Tensor());  // the forward entry is there
    const std::string msg = test::message_of<DeviceError>([&] {
        test::weighted_sum(y, std::vector<float>(static_cast<std::size_t>(y.numel()), 1.0f))
            .backward();
    });
    EXPECT_NE(msg.find("conv2d_backward_weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op conv2d"), std::string::npos) << msg;
    EXPECT_NE(msg.find("device cpu"), std::string::npos) << msg;
    autograd::clear_tape();
}

TEST(KernelTable, ADeviceWithoutABackendIsADeviceError) {
    if (cuda_device::available()) GTEST_SKIP() << "this machine has a CUDA device";
    const std::string msg = test::message_of<DeviceError>([] {
        Tensor::empty({2, 3}, DType::kF32, Device::kCuda);
    });
    // A build without CUDA says so; a CUDA build on a machine without a device says what is
    // missing (the driver, the device).
    EXPECT_NE(msg.find(cuda_device::built() ? "no usable CUDA device" : "no cuda backend"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;  // what to use instead
    EXPECT_THROW(device_kernels(Device::kCuda), DeviceError);
}

TEST(KernelTable, ScopedTablesNestAndRestore) {
    const KernelTable* cpu = &kernels::cpu::kernel_table();
    {
        const ScopedKernelTable a(Device::kCpu, recording_table());
        {
            KernelTable other = kernels::cpu::kernel_table();
            other.device = "other";
            const ScopedKernelTable b(Device::kCpu, other);
            EXPECT_STREQ(device_kernels(Device::kCpu).device, "other");
        }
        EXPECT_STREQ(device_kernels(Device::kCpu).device, "recording");
    }
    EXPECT_EQ(&device_kernels(Device::kCpu), cpu);
}

}  // namespace
}  // namespace dt
