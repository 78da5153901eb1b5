// SPDX-License-Identifier: MIT
// make_optimizer (kind -> class), zero_grad, and the parameter checks shared by sgd.cpp/adam.cpp.
#include "engine/optim/optimizer.h"

#include "engine/core/text.h"
#include "engine/optim/adam.h"
#include "engine/optim/sgd.h"

namespace dt {

void Optimizer::zero_grad() {
    for (Tensor& p : params_) p.zero_grad();
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg, std::vector<Tensor> params) {
    if (cfg.kind == "sgd") return std::make_unique<Sgd>(std::move(params), cfg);
    if (cfg.kind == "adam") return std::make_unique<Adam>(std::move(params), cfg, false);
    if (cfg.kind == "adamw") return std::make_unique<Adam>(std::move(params), cfg, true);
    throw ValueError(
        str("unknown optimizer '", cfg.kind, "' (known: ", join_text(optimizer_names()), ")"));
}

const std::vector<std::string>& optimizer_names() {
    static const std::vector<std::string> v = {"sgd", "adam", "adamw"};
    return v;
}

namespace optim_detail {

void check_params(const std::vector<Tensor>& params, const char* who) {
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Tensor& p = params[i];
        DT_CHECK_VALUE(p.defined(), who, ": parameter ", i, " is an undefined tensor");
        DT_CHECK_T(DTypeError, p.dtype() == DType::kF32, who, ": parameter ", i, " is ", p.str(),
                   " (expected float32)");
    }
}

namespace {
/// The gradient of parameter i, checked, or an undefined tensor.
Tensor grad_of(const Tensor& param, std::size_t i, const char* who) {
    Tensor g = param.grad();
    if (!g.defined()) return g;
    DT_CHECK_SHAPE(g.shape() == param.shape() && g.dtype() == DType::kF32, who,
                   ": gradient of parameter ", i, " is ", g.str(), " but the parameter is ",
                   param.str());
    DT_CHECK_T(DeviceError, g.device() == param.device(), who, ": gradient of parameter ", i,
               " is on ", device_name(g.device()), " but the parameter is ", param.str());
    return g;
}
}  // namespace

std::vector<Tensor> grads_of(const std::vector<Tensor>& params, const char* who) {
    std::vector<Tensor> grads;
    for (std::size_t i = 0; i < params.size(); ++i) grads.push_back(grad_of(params[i], i, who));
    return grads;
}

Tensor zero_counter() { return Tensor::zeros({}, DType::kI64); }

}  // namespace optim_detail

}  // namespace dt
