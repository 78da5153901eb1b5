// SPDX-License-Identifier: MIT
#include "engine/ops/relu.h"

#include "engine/autograd/tape.h"
#include "engine/ops/dispatch.h"
#include "kernels/relu.h"

namespace dt {

Tensor relu(const Tensor& x) {
    ops_detail::check_f32(x, "relu", "input");
    Tensor y = Tensor::empty(x.shape());
    switch (x.device()) {
        case Device::kCpu: kernels::cpu::relu_forward(x.f32(), y.f32(), x.numel()); break;
        case Device::kCuda: ops_detail::no_cuda("relu");
    }
    if (autograd::needs_grad({x})) {
        autograd::record(y, "relu", {x}, [x](const Tensor& dy) {
            Tensor dx = Tensor::empty(x.shape());
            kernels::cpu::relu_backward(x.f32(), dy.f32(), dx.f32(), x.numel());
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

}  // namespace dt
