// SPDX-License-Identifier: MIT
#include "engine/ops/relu.h"

#include "engine/ops/dispatch.h"

namespace dt {

Tensor relu(const Tensor& x) {
    return ops_detail::unary_elementwise<&kernels::KernelTable::relu_forward,
                                         &kernels::KernelTable::relu_backward>(x, "relu");
}

}  // namespace dt
