// SPDX-License-Identifier: MIT
// ResNet-18, CIFAR variant (He et al. 2016, as in kuangliu/pytorch-cifar):
//   stem: conv 3x3/1 pad 1 (64, no bias) -> BN -> ReLU (no max-pool)
//   layer1..layer4: 2 BasicBlocks each, widths 64, 128, 256, 512; the first block of layers 2-4
//   has stride 2. BasicBlock: conv3x3(s)-BN-ReLU-conv3x3-BN, + shortcut, ReLU; the shortcut is
//   the identity, or conv 1x1/s (no bias) + BN when the shape changes.
//   global average pool -> (dropout) -> linear (classes)
// Names follow kuangliu/pytorch-cifar: conv1, bn1, layer{1-4}.{0,1}.{conv1,bn1,conv2,bn2},
// projection shortcut "layerL.0.shortcut.0" (conv) and "layerL.0.shortcut.1" (BN), "linear".
// 10 classes: 11,173,962 trainable parameters. Dropout (cfg.dropout > 0) uses layer id 0.
#pragma once
#include <vector>

#include "models/layers.h"

namespace dt {

class ResNet18 : public Model {
 public:
    explicit ResNet18(const ModelConfig& cfg);
    Tensor forward(const Tensor& x, const ForwardContext& ctx) override;

    struct BasicBlock {
        Conv2d conv1, conv2, shortcut_conv;  // shortcut_conv undefined weight: identity
        BatchNorm2d bn1, bn2, shortcut_bn;
        bool projection = false;
    };

 private:
    ModelConfig cfg_;
    Conv2d conv1_;
    BatchNorm2d bn1_;
    std::vector<BasicBlock> blocks_;  // layer1.0, layer1.1, ..., layer4.1
    Linear linear_;
};

}  // namespace dt
