// SPDX-License-Identifier: MIT
// The permutation of a permuted accumulation mode, drawn on the device (launch.cuh).
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/sample_leaves.h"

namespace dt::kernels::cuda {

namespace {
__global__ void order_kernel(uint32_t* order, int64_t n, uint64_t key) {
    permute_order_body(common::GridPos::here(), order, n, key);
}
}  // namespace

void permutation_into(uint32_t* order, int64_t n, uint64_t key) {
    order_kernel<<<1, 1, 0, stream()>>>(order, n, key);
    check_launch("permute_order");
}

const uint32_t* permutation_on_device(int64_t n, uint64_t key) {
    uint32_t* order =
        static_cast<uint32_t*>(scratch(sizeof(uint32_t) * static_cast<std::size_t>(n > 0 ? n : 1)));
    if (order == nullptr) return nullptr;  // recorded by scratch()
    permutation_into(order, n, key);
    return order;
}

}  // namespace dt::kernels::cuda
