// SPDX-License-Identifier: MIT
#include "models/resnet.h"

#include "engine/ops/add.h"
#include "engine/ops/pool2d.h"
#include "engine/ops/relu.h"

namespace dt {

namespace {

constexpr int kWidths[4] = {64, 128, 256, 512};

ResNet18::BasicBlock make_block(const ParamAdder& add, const std::string& p, int in, int out,
                                int stride) {
    ResNet18::BasicBlock b;
    b.conv1 = Conv2d(add, p + ".conv1", in, out, 3, stride, 1, false);
    b.bn1 = BatchNorm2d(add, p + ".bn1", out);
    b.conv2 = Conv2d(add, p + ".conv2", out, out, 3, 1, 1, false);
    b.bn2 = BatchNorm2d(add, p + ".bn2", out);
    b.projection = stride != 1 || in != out;
    if (b.projection) {
        b.shortcut_conv = Conv2d(add, p + ".shortcut.0", in, out, 1, stride, 0, false);
        b.shortcut_bn = BatchNorm2d(add, p + ".shortcut.1", out);
    }
    return b;
}

Tensor block_forward(ResNet18::BasicBlock& b, const Tensor& x, bool training) {
    Tensor h = relu(b.bn1.forward(b.conv1.forward(x), training));  // (N, Co, H/s, W/s)
    h = b.bn2.forward(b.conv2.forward(h), training);
    Tensor s = b.projection ? b.shortcut_bn.forward(b.shortcut_conv.forward(x), training) : x;
    return relu(add(h, s));
}

}  // namespace

ResNet18::ResNet18(const ModelConfig& cfg) : Model("resnet18"), cfg_(cfg) {
    check_model_config(name(), cfg, 1);
    ParamAdder add = [this](NamedParam p) { return add_param(std::move(p)); };
    conv1_ = Conv2d(add, "conv1", cfg.in_channels, 64, 3, 1, 1, false);
    bn1_ = BatchNorm2d(add, "bn1", 64);
    int64_t h = conv1_.out_extent(cfg.height), w = conv1_.out_extent(cfg.width);
    note_conv_positions(h * w);
    int in = 64;
    for (int l = 0; l < 4; ++l) {
        for (int j = 0; j < 2; ++j) {
            const int stride = (l > 0 && j == 0) ? 2 : 1;
            const std::string p = "layer" + std::to_string(l + 1) + "." + std::to_string(j);
            blocks_.push_back(make_block(add, p, in, kWidths[l], stride));
            const BasicBlock& b = blocks_.back();
            const int64_t bh = b.conv1.out_extent(h), bw = b.conv1.out_extent(w);
            note_conv_positions(bh * bw);  // conv1, conv2 ('same'), the shortcut's 1x1
            note_conv_positions(bh * bw);
            if (b.projection)
                note_conv_positions(b.shortcut_conv.out_extent(h) * b.shortcut_conv.out_extent(w));
            h = bh, w = bw;
            in = kWidths[l];
        }
    }
    linear_ = Linear(add, "linear", 512, cfg.num_classes);
}

Tensor ResNet18::forward(const Tensor& x, const ForwardContext& ctx) {
    check_image_input(name(), x, cfg_.in_channels, cfg_.height, cfg_.width);
    Tensor h = relu(bn1_.forward(conv1_.forward(x), ctx.training));  // (N, 64, H, W)
    for (BasicBlock& b : blocks_) h = block_forward(b, h, ctx.training);  // (N, 512, H/8, W/8)
    h = global_avgpool(h);                                                 // (N, 512)
    h = dropout_layer(h, cfg_.dropout, ctx, 0);
    return linear_.forward(h);  // (N, classes)
}

}  // namespace dt
