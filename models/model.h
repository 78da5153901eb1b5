// SPDX-License-Identifier: MIT
// Models compose engine ops; they hold named parameters in a canonical order (the order in which
// the constructor registers them, which is the forward order). That order defines the
// weights_sha256 of result.json and the tensor order of weights.safetensors.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// kBnGamma and kBnBeta: the scale and shift of a batch norm or a layer norm.
enum class ParamRole { kWeight, kBias, kBnGamma, kBnBeta, kBnRunningMean, kBnRunningVar };

/// One named tensor of a model. Trainable ones get gradients and optimizer updates; buffers
/// (batch-norm running statistics) are saved but neither trained nor hashed as weights.
struct NamedParam {
    std::string name;  // PyTorch-style: "conv1.weight", "layer1.0.bn1.running_mean"
    Tensor tensor;
    ParamRole role = ParamRole::kWeight;
    bool trainable = true;
    int64_t fan_in = 0;   // weights only: inputs per output (Ci*Kh*Kw or I)
    int64_t fan_out = 0;  // weights only: outputs per input (Co*Kh*Kw or O)
};

enum class InitScheme {
    kGlorotUniform,  // U(-a, a), a = sqrt(6 / (fan_in + fan_out))
    kHeUniform,      // U(-a, a), a = sqrt(6 / fan_in)  (Kaiming-uniform for ReLU)
};

/// Per-step inputs to forward() besides the images.
struct ForwardContext {
    bool training = true;
    uint64_t epoch = 0;
    uint64_t dropout_seed = 0;
    std::vector<int64_t> sample_ids;  // dataset index of every sample in the batch
};

struct ModelConfig {
    std::string name = "smallcnn";  // one of model_names()
    int kernel_size = 3;            // mediumcnn only: 1, 3, 5 or 7
    int in_channels = 1;
    int height = 28;
    int width = 28;
    int num_classes = 10;
    float dropout = 0.0f;  // probability before the classifier (0 = no dropout layer)
    // gpt only (models/gpt.h): blocks, attention heads, features per token, tokens per sequence.
    int layers = 4;
    int heads = 4;
    int embed = 128;
    int64_t context = 128;
};

class Model {
 public:
    virtual ~Model() = default;
    /// x (N, C, H, W) float32 -> logits (N, num_classes); a language model (gpt): tokens (N, T)
    /// int64 -> logits (N * T, vocabulary).
    virtual Tensor forward(const Tensor& x, const ForwardContext& ctx) = 0;
    /// Rows of logits per sample: 1 for a classifier, T for a language model (a loss row per
    /// token; a split batch's loss divides by the whole batch's rows).
    virtual int64_t rows_per_sample() const { return 1; }
    /// True when a trainable tensor is used by two ops of a step (a tied embedding and head):
    /// its two gradients are added before the processes' parts meet.
    virtual bool ties_parameters() const { return false; }

    const std::string& name() const { return name_; }
    /// Every parameter and buffer in canonical order.
    const std::vector<NamedParam>& params() const { return params_; }
    /// Trainable tensors in canonical order (what optimizers update and weights_sha256 hashes).
    std::vector<Tensor> trainable() const;
    /// Weights drawn from the init stream: element i of the k-th trainable weight is keyed by
    /// (seed, kInit, index = i, sub = k) (kernels/init.h); biases and beta are 0, gamma 1,
    /// running stats 0/1. On the parameters' device, with the same bits on every device.
    void init(InitScheme scheme, uint64_t seed);
    int64_t num_trainable() const;  // element count
    /// Moves every parameter and buffer to `device` (in place: layers see the moved tensors).
    /// Before an optimizer is made over trainable().
    void to(Device device);
    /// Like to(device) for a model about to be initialised: every parameter and buffer gets
    /// storage on `device` whose contents init() then writes in full; nothing is copied.
    void place_for_init(Device device);
    Device device() const;  // of the parameters (cpu for a model without any)
    /// Positions (Ho * Wo) of every convolution's output at the configured input size, in
    /// forward order (empty without convolutions): conv.wgrad's tree leaves group samples by
    /// this (conv2d_tree_group), which decides whether a split batch keeps the tree's bits
    /// (engine/runtime/allreduce_plan.h).
    const std::vector<int64_t>& conv_positions() const { return conv_positions_; }

 protected:
    explicit Model(std::string name) : name_(std::move(name)) {}
    Tensor& add_param(NamedParam p);
    /// Records a convolution's output positions (constructors, in forward order).
    void note_conv_positions(int64_t positions) { conv_positions_.push_back(positions); }
    std::vector<NamedParam> params_;

 private:
    std::string name_;
    std::vector<int64_t> conv_positions_;
};

/// Builds one of the reference models; throws ValueError for an unknown name or bad size.
std::unique_ptr<Model> make_model(const ModelConfig& cfg);
/// The names make_model knows, in order: smallcnn, smallcnn-bn, mediumcnn, resnet18, gpt
/// (models/registry.cpp, the one list of models).
const std::vector<std::string>& model_names();

}  // namespace dt
