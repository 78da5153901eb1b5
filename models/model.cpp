// SPDX-License-Identifier: MIT
#include "models/model.h"

#include <cmath>

#include "kernels/common/philox.h"

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
    using namespace kernels::common;
    uint32_t weight_index = 0;  // k: counts trainable weights in canonical order
    for (NamedParam& p : params_) {
        float* v = p.tensor.f32();
        const int64_t n = p.tensor.numel();
        switch (p.role) {
            case ParamRole::kWeight: {
                double fan = scheme == InitScheme::kGlorotUniform
                                 ? static_cast<double>(p.fan_in + p.fan_out)
                                 : static_cast<double>(p.fan_in);
                DT_CHECK(fan > 0, "model ", name_, ": weight ", p.name, " has no fan-in");
                const float a = static_cast<float>(std::sqrt(6.0 / fan));
                for (int64_t i = 0; i < n; ++i) {
                    Philox4 r = philox_draw(seed, RngStream::kInit, static_cast<uint64_t>(i),
                                            weight_index);
                    // ORDER: u in [0,1) -> (2u - 1) * a, each step rounded in float.
                    v[i] = (2.0f * uniform01(r.v[0]) - 1.0f) * a;
                }
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
