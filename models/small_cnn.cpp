// SPDX-License-Identifier: MIT
#include "models/small_cnn.h"

#include "engine/ops/pool2d.h"
#include "engine/ops/relu.h"
#include "engine/ops/shape_ops.h"

namespace dt {

namespace {
constexpr int kChannels[3] = {16, 32, 32};
constexpr int kHidden = 32;
}  // namespace

SmallCNN::SmallCNN(const ModelConfig& cfg, bool batchnorm)
    : Model(batchnorm ? "smallcnn-bn" : "smallcnn"), cfg_(cfg), batchnorm_(batchnorm) {
    check_model_config(name(), cfg, 8);  // three 2x2 pools need H, W >= 8
    ParamAdder add = [this](NamedParam p) { return add_param(std::move(p)); };
    int in = cfg.in_channels;
    int64_t h = cfg.height, w = cfg.width;
    for (int i = 0; i < 3; ++i) {
        const std::string n = std::to_string(i + 1);
        conv_[i] = Conv2d(add, "conv" + n, in, kChannels[i], 3, 1, 1, /*bias=*/!batchnorm);
        h = conv_[i].out_extent(h), w = conv_[i].out_extent(w);
        note_conv_positions(h * w);
        h /= 2, w /= 2;  // the 2x2 pool
        if (batchnorm) bn_[i] = BatchNorm2d(add, "bn" + n, kChannels[i]);
        in = kChannels[i];
    }
    const int flat = kChannels[2] * (cfg.height / 8) * (cfg.width / 8);
    fc1_ = Linear(add, "fc1", flat, kHidden);
    fc2_ = Linear(add, "fc2", kHidden, cfg.num_classes);
}

Tensor SmallCNN::forward(const Tensor& x, const ForwardContext& ctx) {
    check_image_input(name(), x, cfg_.in_channels, cfg_.height, cfg_.width);
    Tensor h = x;  // (N, Ci, H, W)
    for (int i = 0; i < 3; ++i) {
        h = conv_[i].forward(h);  // (N, C_i, H', W')
        if (batchnorm_) h = bn_[i].forward(h, ctx.training);
        // maxpool2d(relu(h)), fused (bit-identical, one full-size pass less each way).
        h = relu_maxpool2d(h, Pool2dOptions{2, 2, 0});  // (N, C_i, H'/2, W'/2)
    }
    h = relu(fc1_.forward(flatten(h)));  // (N, 32)
    h = dropout_layer(h, cfg_.dropout, ctx, 0);
    return fc2_.forward(h);  // (N, classes)
}

}  // namespace dt
