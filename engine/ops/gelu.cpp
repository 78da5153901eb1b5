// SPDX-License-Identifier: MIT
#include "engine/ops/gelu.h"

#include "engine/ops/dispatch.h"

namespace dt {

Tensor gelu(const Tensor& x) {
    return ops_detail::unary_elementwise<&kernels::KernelTable::gelu_forward,
                                         &kernels::KernelTable::gelu_backward>(x, "gelu");
}

}  // namespace dt
