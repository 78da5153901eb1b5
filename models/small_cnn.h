// SPDX-License-Identifier: MIT
// SmallCNN, the reference model for MNIST-sized inputs:
//   3 x [conv 3x3 pad 1 -> (BatchNorm) -> ReLU -> maxpool 2x2/2], channels 16, 32, 32
//   flatten -> fc1 (32) -> ReLU -> (dropout) -> fc2 (classes)
// Spatial size H -> H/2 -> H/4 -> H/8 (floor): 28 -> 14 -> 7 -> 3 (flatten 32*3*3 = 288),
// 32 -> 16 -> 8 -> 4 (flatten 512). "smallcnn-bn" puts a BatchNorm after every conv and drops
// the conv bias. Canonical order: conv1.{weight,bias}, [bn1.*], conv2, [bn2], conv3, [bn3],
// fc1.{weight,bias}, fc2.{weight,bias}. 28x28x1, 10 classes: 23,626 trainable (smallcnn),
// 23,706 (smallcnn-bn). Dropout (cfg.dropout > 0) uses layer id 0.
#pragma once
#include <array>

#include "models/layers.h"

namespace dt {

class SmallCNN : public Model {
 public:
    /// Throws ValueError for sizes below 8x8 or bad channels/classes/dropout.
    SmallCNN(const ModelConfig& cfg, bool batchnorm);
    Tensor forward(const Tensor& x, const ForwardContext& ctx) override;

 private:
    ModelConfig cfg_;
    bool batchnorm_;
    std::array<Conv2d, 3> conv_;
    std::array<BatchNorm2d, 3> bn_;
    Linear fc1_, fc2_;
};

}  // namespace dt
