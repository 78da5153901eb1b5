// SPDX-License-Identifier: MIT
// What the training-step benchmarks share (bench/train_step_bench.cpp on the CPU,
// bench/gpu/gpu_step_bench.cpp on a GPU): a model with its Adam optimizer and a fixed synthetic
// batch (Philox pixels, labels i % 10; for gpt Philox bytes, each target the next byte), all
// from seed 0, and the reduce-site specs of a preset.
// One step = forward (training mode) -> softmax cross-entropy -> zero_grad -> backward -> Adam;
// with trainer_checks, also what the trainer's step adds (apps/train/trainer.cpp): the tape's
// finite check of every gradient and the loss read on the host (issued after the forward, taken
// after the backward: the divergence check). The labels stay on the host, as the trainer's do (the
// loss checks and uploads them).
#pragma once
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/core/pending_item.h"
#include "engine/noise/noise_config.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/softmax_xent.h"
#include "engine/optim/optimizer.h"
#include "kernels/common/philox.h"
#include "models/model.h"

namespace dt::bench {

using dt::Tensor;

struct Shape {
    const char* model;
    int kernel_size;
    int channels, hw, batch;  // gpt: hw is the context, channels unused
    int iterations;           // adjacent step pairs per case (the slow models get few)
};

/// The shapes of BM_TrainStep and dt_roofline: SmallCNN and SmallCNN-BN (Fashion-MNIST
/// 1x28x28, batch 128), MediumCNN k = 1, 3, 5, 7 (CIFAR 3x32x32, batch 64), ResNet-18 (CIFAR,
/// batch 128), GPT (the default model and recipe batch: 8 sequences of 128 bytes).
/// bench/peers/compare.py's MODELS holds the same batches.
inline constexpr Shape kTrainStepShapes[] = {
    {"smallcnn", 3, 1, 28, 128, 20}, {"smallcnn-bn", 3, 1, 28, 128, 20},
    {"mediumcnn", 1, 3, 32, 64, 10}, {"mediumcnn", 3, 3, 32, 64, 5},
    {"mediumcnn", 5, 3, 32, 64, 3},  {"mediumcnn", 7, 3, 32, 64, 3},
    {"resnet18", 3, 3, 32, 128, 3},  {"gpt", 3, 1, 128, 8, 10},
};

/// A shape's name in the benchmarks: the model's, with _k<size> for mediumcnn.
inline std::string shape_name(const Shape& s) {
    const std::string model = s.model;
    return model == "mediumcnn" ? model + "_k" + std::to_string(s.kernel_size) : model;
}

/// A model, its optimizer and the fixed batch, all from seed 0.
struct Trainee {
    std::unique_ptr<dt::Model> model;
    std::unique_ptr<dt::Optimizer> optimizer;
    Tensor images, labels;
    dt::ForwardContext ctx;
    bool trainer_checks = false;

    /// On `device`: the model initialised on the host and moved, the batch uploaded.
    explicit Trainee(const Shape& s, dt::Device device = dt::Device::kCpu) {
        dt::ModelConfig mc;
        mc.name = s.model;
        mc.kernel_size = s.kernel_size;
        mc.in_channels = s.channels;
        mc.height = mc.width = s.hw;
        mc.num_classes = 10;
        mc.context = s.hw;  // gpt: the default blocks, heads and width; hw bytes per sequence
        model = dt::make_model(mc);
        model->place_for_init(device);
        model->init(dt::InitScheme::kGlorotUniform, 0);  // on the device, as the trainer does
        dt::OptimizerConfig oc;
        oc.kind = "adam";
        optimizer = dt::make_optimizer(oc, model->trainable());
        namespace c = dt::kernels::common;
        const int64_t n = int64_t{s.batch} * s.channels * s.hw * s.hw;
        std::vector<float> px(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            const c::Philox4 r =
                c::philox_draw(0, c::RngStream::kTest, static_cast<uint64_t>(i), 0);
            px[static_cast<std::size_t>(i)] = 2.0f * c::uniform01(r.v[0]) - 1.0f;
        }
        std::vector<int64_t> lab(static_cast<std::size_t>(s.batch));
        for (int i = 0; i < s.batch; ++i) lab[static_cast<std::size_t>(i)] = i % 10;
        if (mc.name == "gpt") {  // (batch, hw) bytes; targets: the next byte of each
            std::vector<int64_t> tokens(static_cast<std::size_t>(s.batch * s.hw));
            for (std::size_t i = 0; i < tokens.size(); ++i)
                tokens[i] = static_cast<int64_t>((px[i] + 1.0f) * 128.0f) % 256;
            std::vector<int64_t> next(tokens.begin() + 1, tokens.end());
            next.push_back(tokens.front());
            images = Tensor::from_vector_i64({s.batch, s.hw}, tokens).to(device);
            labels = Tensor::from_vector_i64({s.batch * s.hw}, next);
        } else {
            images = Tensor::from_vector({s.batch, s.channels, s.hw, s.hw}, px).to(device);
            labels = Tensor::from_vector_i64({s.batch}, lab);
        }
        ctx.training = true;
        for (int i = 0; i < s.batch; ++i) ctx.sample_ids.push_back(i);
    }

    void step() {
        Tensor loss = dt::softmax_cross_entropy(model->forward(images, ctx), labels);
        std::optional<dt::PendingItem> loss_value;
        if (trainer_checks) loss_value.emplace(loss);
        optimizer->zero_grad();
        {
            const dt::autograd::FiniteCheckGuard check(trainer_checks);
            dt::autograd::backward(loss);
        }
        if (loss_value && !std::isfinite(loss_value->get())) throw dt::Error("the loss diverged");
        optimizer->step(1e-4f);  // small: the weights stay in range over thousands of steps
    }
};

/// An implementation preset, or one mode (kahan, ...) at every site, as --impl takes them.
inline dt::ReduceSiteSpecs preset_specs(const std::string& preset) {
    dt::NoiseConfig cfg;
    cfg.impl = preset;
    if (const auto sites = dt::impl_preset(preset)) {
        cfg.sites = *sites;
    } else {
        for (dt::SiteSetting& s : cfg.sites) s.mode = dt::accum_mode_from_name(preset).value();
    }
    return dt::reduce_site_specs(cfg);
}

}  // namespace dt::bench
