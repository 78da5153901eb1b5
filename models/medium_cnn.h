// SPDX-License-Identifier: MIT
// MediumCNN(k), the kernel-size study model:
//   6 x [conv kxk, 'same' padding k/2, no bias -> BatchNorm -> ReLU -> maxpool 2x2/2 while the
//   spatial size allows (min(H, W) >= 2 before the pool)], channels 16, 32, 64, 128, 256, 512
//   global average pool -> (dropout) -> fc (classes)
// 28x28: pools after blocks 1-4 (28 -> 14 -> 7 -> 3 -> 1); 32x32: after blocks 1-5 (-> 1).
// Canonical order: conv1.weight, bn1.{weight,bias,running_mean,running_var}, ..., conv6, bn6,
// fc.{weight,bias}. k must be 1, 3, 5 or 7. Dropout (cfg.dropout > 0) uses layer id 0.
#pragma once
#include <array>

#include "models/layers.h"

namespace dt {

class MediumCNN : public Model {
 public:
    /// Throws ValueError for a kernel size outside {1, 3, 5, 7} or bad sizes.
    explicit MediumCNN(const ModelConfig& cfg);
    Tensor forward(const Tensor& x, const ForwardContext& ctx) override;

 private:
    ModelConfig cfg_;
    std::array<Conv2d, 6> conv_;
    std::array<BatchNorm2d, 6> bn_;
    std::array<bool, 6> pool_{};  // whether block i ends with a max-pool
    Linear fc_;
};

}  // namespace dt
