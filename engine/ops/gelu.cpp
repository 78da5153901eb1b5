// SPDX-License-Identifier: MIT
#include "engine/ops/gelu.h"

#include "engine/autograd/tape.h"
#include "engine/ops/dispatch.h"

namespace dt {

Tensor gelu(const Tensor& x) {
    ops_detail::check_f32(x, "gelu", "input");
    Tensor y = ops_detail::empty_like_device(x.shape(), x);
    device_kernels(x.device()).gelu_forward(x.f32(), y.f32(), x.numel());
    if (autograd::needs_grad({x})) {
        autograd::record(y, "gelu", {x}, [x](const Tensor& dy) {
            Tensor dx = ops_detail::empty_like_device(x.shape(), x);
            device_kernels(x.device()).gelu_backward(x.f32(), dy.f32(), dx.f32(), x.numel());
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

}  // namespace dt
