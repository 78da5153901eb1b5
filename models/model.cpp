// SPDX-License-Identifier: MIT
#include "models/model.h"

#include <cmath>

#include "engine/ops/init.h"

namespace dt {

std::vector<Tensor> Model::trainable() const {
    std::vector<Tensor> out;
    for (const NamedParam& p : params_) {
        if (p.trainable) out.push_back(p.tensor);
    }
    return out;
}

int64_t Model::num_trainable() const {
    int64_t n = 0;
    for (const NamedParam& p : params_) {
        if (p.trainable) n += p.tensor.numel();
    }
    return n;
}

void Model::to(Device device) {
    for (NamedParam& p : params_) p.tensor.move_to(device);
}

void Model::place_for_init(Device device) {
    for (NamedParam& p : params_) p.tensor.reset_storage(device);
}

Device Model::device() const { return params_.empty() ? Device::kCpu : params_[0].tensor.device(); }

Tensor& Model::add_param(NamedParam p) {
    for (const NamedParam& q : params_) {
        DT_CHECK(q.name != p.name, "model ", name_, ": parameter name ", p.name, " used twice");
    }
    p.tensor.set_requires_grad(p.trainable);
    params_.push_back(std::move(p));
    return params_.back().tensor;
}

void Model::init(InitScheme scheme, uint64_t seed) {
    uint32_t weight_index = 0;  // k: counts trainable weights in canonical order
    for (NamedParam& p : params_) {
        switch (p.role) {
            case ParamRole::kWeight: {
                double fan = scheme == InitScheme::kGlorotUniform
                                 ? static_cast<double>(p.fan_in + p.fan_out)
                                 : static_cast<double>(p.fan_in);
                DT_CHECK(fan > 0, "model ", name_, ": weight ", p.name, " has no fan-in");
                const float a = static_cast<float>(std::sqrt(6.0 / fan));
                // On the weight's device; the recipe and its ORDER: kernels/init.h.
                init_uniform_(p.tensor, seed, weight_index, a);
                ++weight_index;
                break;
            }
            case ParamRole::kBias:
            case ParamRole::kBnBeta:
            case ParamRole::kBnRunningMean: p.tensor.fill(0.0f); break;
            case ParamRole::kBnGamma:
            case ParamRole::kBnRunningVar: p.tensor.fill(1.0f); break;
        }
    }
}

}  // namespace dt
