// SPDX-License-Identifier: MIT
// dt::add: a + b for equal shapes (residual connections). Backward passes dy to both inputs
// unchanged; when a and b are the same tensor the tape adds the two contributions (tape.h).
#include "engine/ops/add.h"

#include "engine/autograd/tape.h"
#include "engine/ops/dispatch.h"

namespace dt {

Tensor add(const Tensor& a, const Tensor& b) {
    ops_detail::check_f32(a, "add", "a");
    ops_detail::check_f32(b, "add", "b");
    DT_CHECK_SHAPE(a.shape() == b.shape(), "add: shapes differ: a is ", a.str(), ", b is ", b.str(),
                   " (hint: add does not broadcast)");
    DT_CHECK_T(DeviceError, a.device() == b.device(), "add: a and b must be on one device, got a ",
               a.str(), ", b ", b.str());
    Tensor y = ops_detail::empty_like_device(a.shape(), a);
    device_kernels(a.device()).add_forward(a.f32(), b.f32(), y.f32(), a.numel());
    if (autograd::needs_grad({a, b})) {
        autograd::record(y, "add", {a, b},
                         [](const Tensor& dy) { return std::vector<Tensor>{dy, dy}; });
    }
    return y;
}

}  // namespace dt
