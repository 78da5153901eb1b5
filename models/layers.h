// SPDX-License-Identifier: MIT
// Building blocks that register their parameters on a Model and call the engine ops in forward.
// A layer holds Tensor handles that share storage with the model's NamedParam entries, so the
// optimizer, init() and checkpoint loading (all of which write in place) are seen by forward.
//
// Naming is PyTorch's state_dict naming, prefix + "." + field:
//   Conv2d       "<p>.weight" (Co, Ci, K, K), "<p>.bias" (Co) when enabled
//   Linear       "<p>.weight" (O, I), "<p>.bias" (O)
//   BatchNorm2d  "<p>.weight" (gamma), "<p>.bias" (beta), "<p>.running_mean", "<p>.running_var"
// registered in that order (PyTorch's num_batches_tracked is not kept: momentum is fixed).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/ops/batchnorm2d.h"
#include "engine/ops/conv2d.h"
#include "models/model.h"

namespace dt {

/// Registers one parameter on the model under construction and returns a handle to its tensor
/// (models pass [this](NamedParam p) { return add_param(std::move(p)); }).
using ParamAdder = std::function<Tensor(NamedParam)>;

/// 2-D convolution, weight (Co, Ci, K, K): fan_in = Ci*K*K, fan_out = Co*K*K.
class Conv2d {
 public:
    Conv2d() = default;
    Conv2d(const ParamAdder& add, const std::string& name, int in_channels, int out_channels,
           int kernel, int stride, int padding, bool bias);
    /// x (N, Ci, H, W) -> (N, Co, Ho, Wo).
    Tensor forward(const Tensor& x) const;
    /// Ho for an input of H rows (Wo likewise): (H + 2 padding - kernel) / stride + 1.
    int64_t out_extent(int64_t in) const;

    Tensor weight;
    Tensor bias;  // undefined when the layer has no bias (a BatchNorm follows)
    Conv2dOptions opt;
};

/// Fully connected layer, weight (O, I) (PyTorch layout): fan_in = I, fan_out = O.
class Linear {
 public:
    Linear() = default;
    Linear(const ParamAdder& add, const std::string& name, int in_features, int out_features);
    /// x (N, I) -> (N, O).
    Tensor forward(const Tensor& x) const;

    Tensor weight;
    Tensor bias;
};

/// Batch normalisation over (N, H, W) per channel; momentum 0.1, eps 1e-5 (PyTorch defaults).
/// gamma/beta are trainable; running_mean/running_var are buffers (saved, not trained/hashed).
class BatchNorm2d {
 public:
    BatchNorm2d() = default;
    BatchNorm2d(const ParamAdder& add, const std::string& name, int channels);
    /// x (N, C, H, W) -> (N, C, H, W); training uses batch statistics and updates the running
    /// ones in place, eval uses the running ones.
    Tensor forward(const Tensor& x, bool training);

    Tensor gamma, beta, running_mean, running_var;
    BatchNormOptions opt;
};

/// Throws ShapeError unless x is float32 (N >= 1, c, h, w); `model` names the caller.
void check_image_input(const std::string& model, const Tensor& x, int c, int h, int w);

/// Throws ValueError unless cfg has positive channels/classes, dropout in [0, 1) and at least
/// `min_size` pixels in height and width; `model` names the caller.
void check_model_config(const std::string& model, const ModelConfig& cfg, int min_size);

/// Inverted dropout with probability p keyed by (ctx.dropout_seed, ctx.epoch, layer,
/// ctx.sample_ids); identity when p == 0 or !ctx.training. In training, ctx.sample_ids must hold
/// one id per sample (ValueError otherwise).
Tensor dropout_layer(const Tensor& x, float p, const ForwardContext& ctx, uint32_t layer);

}  // namespace dt
