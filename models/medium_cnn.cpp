// SPDX-License-Identifier: MIT
#include "models/medium_cnn.h"

#include <algorithm>

#include "engine/ops/pool2d.h"
#include "engine/ops/relu.h"

namespace dt {

namespace {
constexpr int kChannels[6] = {16, 32, 64, 128, 256, 512};
}

MediumCNN::MediumCNN(const ModelConfig& cfg) : Model("mediumcnn"), cfg_(cfg) {
    const int k = cfg.kernel_size;
    DT_CHECK_VALUE(k == 1 || k == 3 || k == 5 || k == 7,
                   "mediumcnn: kernel_size must be 1, 3, 5 or 7, got ", k);
    check_model_config(name(), cfg, 1);
    ParamAdder add = [this](NamedParam p) { return add_param(std::move(p)); };
    int in = cfg.in_channels;
    int h = cfg.height, w = cfg.width;
    for (int i = 0; i < 6; ++i) {
        const std::string n = std::to_string(i + 1);
        conv_[i] = Conv2d(add, "conv" + n, in, kChannels[i], k, 1, k / 2, /*bias=*/false);
        note_conv_positions(int64_t{h} * w);  // 'same' padding: the input's size
        bn_[i] = BatchNorm2d(add, "bn" + n, kChannels[i]);
        pool_[i] = std::min(h, w) >= 2;
        if (pool_[i]) {
            h /= 2;
            w /= 2;
        }
        in = kChannels[i];
    }
    fc_ = Linear(add, "fc", kChannels[5], cfg.num_classes);
}

Tensor MediumCNN::forward(const Tensor& x, const ForwardContext& ctx) {
    check_image_input(name(), x, cfg_.in_channels, cfg_.height, cfg_.width);
    Tensor h = x;  // (N, Ci, H, W)
    for (int i = 0; i < 6; ++i) {
        h = bn_[i].forward(conv_[i].forward(h), ctx.training);  // (N, C_i, H', W')
        // relu, then the pool where there is one (fused: bit-identical to maxpool2d(relu(h))).
        h = pool_[i] ? relu_maxpool2d(h, Pool2dOptions{2, 2, 0}) : relu(h);
    }
    h = global_avgpool(h);  // (N, 512)
    h = dropout_layer(h, cfg_.dropout, ctx, 0);
    return fc_.forward(h);  // (N, classes)
}

}  // namespace dt
