// SPDX-License-Identifier: MIT
// Optimizers update parameters in place from their .grad(), elementwise, in a fixed order
// (sgd.h, adam.h hold the formulas). Parameters are visited in the order given ("param<i>").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

struct OptimizerConfig {
    std::string kind = "adam";  // one of optimizer_names()
    float momentum = 0.0f;      // sgd
    bool nesterov = false;      // sgd (needs momentum > 0)
    float weight_decay = 0.0f;  // sgd/adam: L2 added to the gradient; adamw: decoupled
    float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // adam/adamw
};

class Optimizer {
 public:
    virtual ~Optimizer() = default;
    /// One update with learning rate lr; parameters without a gradient are skipped.
    virtual void step(float lr) = 0;
    /// Drops every parameter's gradient.
    void zero_grad();
    /// Named state tensors (momentum buffers, moments, step count) for checkpoints.
    virtual std::vector<std::pair<std::string, Tensor>> state() = 0;

 protected:
    explicit Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {}
    std::vector<Tensor> params_;
};

/// Throws ValueError for an unknown kind or invalid hyper-parameters.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg, std::vector<Tensor> params);
/// The kinds make_optimizer knows: sgd, adam, adamw.
const std::vector<std::string>& optimizer_names();

namespace optim_detail {
/// Throws unless every parameter is a defined float32 tensor (`who`: "sgd", "adam", ...); the
/// updates run on each parameter's device.
void check_params(const std::vector<Tensor>& params, const char* who);
/// The gradient of every parameter (each checked to match its parameter's shape, dtype and
/// device), undefined where a parameter has none; all checked before a step changes anything (a
/// bad gradient leaves the parameters, their state and the counters as they were).
std::vector<Tensor> grads_of(const std::vector<Tensor>& params, const char* who);
/// An int64 scalar tensor holding 0 (step counters).
Tensor zero_counter();

/// The updates of one step, run in one kernel-table call per stretch of parameters on the same
/// device (one for a model on one device), in parameter order.
template <class Item>
class UpdateList {
 public:
    void add(Device d, const Item& item) {
        if (stretches_.empty() || stretches_.back().device != d)
            stretches_.push_back({d, items_.size()});
        items_.push_back(item);
    }
    /// f(device, items, count) for each stretch, in order.
    template <class Run>
    void run(Run&& f) const {
        for (std::size_t s = 0; s < stretches_.size(); ++s) {
            const std::size_t begin = stretches_[s].begin;
            const std::size_t end =
                s + 1 < stretches_.size() ? stretches_[s + 1].begin : items_.size();
            f(stretches_[s].device, items_.data() + begin, static_cast<int64_t>(end - begin));
        }
    }

 private:
    struct Stretch {
        Device device;
        std::size_t begin;
    };
    std::vector<Item> items_;
    std::vector<Stretch> stretches_;
};
}  // namespace optim_detail

}  // namespace dt
