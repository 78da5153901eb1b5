// SPDX-License-Identifier: MIT
#include "models/layers.h"

#include "engine/ops/dropout.h"
#include "engine/ops/linear.h"

namespace dt {

// ---- Conv2d ----

Conv2d::Conv2d(const ParamAdder& add, const std::string& name, int in_channels, int out_channels,
               int kernel, int stride, int padding, bool with_bias) {
    const int64_t ci = in_channels, co = out_channels, k = kernel;
    weight = add(NamedParam{name + ".weight", Tensor::zeros({co, ci, k, k}), ParamRole::kWeight,
                            true, ci * k * k, co * k * k});
    if (with_bias) {
        bias = add(NamedParam{name + ".bias", Tensor::zeros({co}), ParamRole::kBias, true, 0, 0});
    }
    opt.stride = stride;
    opt.padding = padding;
}

Tensor Conv2d::forward(const Tensor& x) const { return conv2d(x, weight, bias, opt); }

int64_t Conv2d::out_extent(int64_t in) const {
    return (in + 2 * opt.padding - weight.shape()[2]) / opt.stride + 1;
}

// ---- Linear ----

Linear::Linear(const ParamAdder& add, const std::string& name, int in_features,
               int out_features) {
    const int64_t i = in_features, o = out_features;
    weight = add(NamedParam{name + ".weight", Tensor::zeros({o, i}), ParamRole::kWeight, true, i,
                            o});
    bias = add(NamedParam{name + ".bias", Tensor::zeros({o}), ParamRole::kBias, true, 0, 0});
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

// ---- BatchNorm2d ----

BatchNorm2d::BatchNorm2d(const ParamAdder& add, const std::string& name, int channels) {
    const int64_t c = channels;
    gamma = add(NamedParam{name + ".weight", Tensor::full({c}, 1.0f), ParamRole::kBnGamma, true});
    beta = add(NamedParam{name + ".bias", Tensor::zeros({c}), ParamRole::kBnBeta, true});
    running_mean = add(NamedParam{name + ".running_mean", Tensor::zeros({c}),
                                  ParamRole::kBnRunningMean, false});
    running_var = add(NamedParam{name + ".running_var", Tensor::full({c}, 1.0f),
                                 ParamRole::kBnRunningVar, false});
    opt.momentum = 0.1f;
    opt.eps = 1e-5f;
}

Tensor BatchNorm2d::forward(const Tensor& x, bool training) {
    BatchNormOptions o = opt;
    o.training = training;
    return batchnorm2d(x, gamma, beta, running_mean, running_var, o);
}

// ---- checks and dropout ----

void check_image_input(const std::string& model, const Tensor& x, int c, int h, int w) {
    DT_CHECK(x.defined(), model, ": input is undefined");
    DT_CHECK_T(DTypeError, x.dtype() == DType::kF32, model, ": input must be float32, got ",
               x.str());
    DT_CHECK_SHAPE(x.ndim() == 4 && x.dim(0) >= 1 && x.dim(1) == c && x.dim(2) == h &&
                       x.dim(3) == w,
                   model, ": input must be (N, ", c, ", ", h, ", ", w, ") with N >= 1, got ",
                   x.str(), " (hint: the model was built for ModelConfig in_channels=", c,
                   " height=", h, " width=", w, ")");
}

void check_model_config(const std::string& model, const ModelConfig& cfg, int min_size) {
    DT_CHECK_VALUE(cfg.in_channels >= 1, model, ": in_channels must be >= 1, got ",
                   cfg.in_channels);
    DT_CHECK_VALUE(cfg.num_classes >= 1, model, ": num_classes must be >= 1, got ",
                   cfg.num_classes);
    DT_CHECK_VALUE(cfg.height >= min_size && cfg.width >= min_size, model,
                   ": input size ", cfg.height, "x", cfg.width, " is too small (needs at least ",
                   min_size, "x", min_size, ")");
    DT_CHECK_VALUE(cfg.dropout >= 0.0f && cfg.dropout < 1.0f, model,
                   ": dropout must be in [0, 1), got ", cfg.dropout);
}

Tensor dropout_layer(const Tensor& x, float p, const ForwardContext& ctx, uint32_t layer) {
    if (p == 0.0f || !ctx.training) return x;
    DT_CHECK_VALUE(static_cast<int64_t>(ctx.sample_ids.size()) == x.dim(0),
                   "dropout layer ", layer, ": ForwardContext.sample_ids has ",
                   ctx.sample_ids.size(), " ids for a batch of ", x.dim(0),
                   " (hint: pass the dataset index of every sample when training with dropout)");
    DropoutKey key;
    key.seed = ctx.dropout_seed;
    key.epoch = ctx.epoch;
    key.layer = layer;
    key.sample_ids = ctx.sample_ids;
    return dropout(x, p, true, key);
}

}  // namespace dt
