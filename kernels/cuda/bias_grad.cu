// SPDX-License-Identifier: MIT
// bias.grad on the GPU (kernels/bias_add.h's recipe): the launchers of bias_grad_bodies.h on the
// engine's stream. Scratch: the per-(sample, channel) leaves of the mode, then the sample order.
#include "kernels/cuda/bias_grad_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

namespace {

__global__ void leaves_kernel(const float* dy, float* leaves, BiasAddParams p) {
    bias_grad_leaves_body(GridPos::here(), dy, leaves, p);
}
__global__ void kahan_leaves_kernel(const float* dy, common::KahanSum* leaves, BiasAddParams p) {
    bias_grad_kahan_leaves_body(GridPos::here(), dy, leaves, p);
}
__global__ void exact_leaves_kernel(const float* dy, common::ExactAcc* accs, BiasAddParams p) {
    bias_grad_exact_leaves_body(GridPos::here(), dy, accs, p);
}
__global__ void order_kernel(uint32_t* order, BiasAddParams p) {
    bias_grad_order_body(GridPos::here(), order, p);
}
__global__ void combine_kernel(const float* leaves, const common::KahanSum* kleaves,
                               const common::ExactAcc* accs, const uint32_t* order, float* db,
                               BiasAddParams p) {
    bias_grad_combine_body(GridPos::here(), leaves, kleaves, accs, order, db, p);
}
__global__ void atomic_kernel(const float* dy, float* db, BiasAddParams p) {
    bias_grad_atomic_body(GridPos::here(), dy, db, p);
}

std::size_t leaf_bytes(common::AccumMode m) {
    switch (m) {
        case common::AccumMode::kKahan: return sizeof(common::KahanSum);
        case common::AccumMode::kExact: return sizeof(common::ExactAcc);
        default: return sizeof(float);
    }
}

}  // namespace

void bias_add_backward(const float* dy, float* db, const BiasAddParams& p) {
    if (p.c <= 0) return;
    const common::AccumMode mode = p.accum.mode;
    if (mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(db, 0, sizeof(float) * static_cast<std::size_t>(p.c), stream());
        const int64_t work = (p.n + kBiasAddAtomicGroup - 1) / kBiasAddAtomicGroup * p.c;
        if (work > 0) {
            atomic_kernel<<<elementwise_blocks(work), kElementwiseThreads, 0, stream()>>>(dy, db,
                                                                                         p);
            check_launch("bias_add_backward (atomic)");
        }
        return;
    }
    const std::size_t leaves = static_cast<std::size_t>(p.n * p.c) * leaf_bytes(mode);
    const std::size_t offset = (leaves + 255) / 256 * 256;
    char* s = static_cast<char*>(scratch(offset + sizeof(uint32_t) * static_cast<std::size_t>(p.n)));
    if (s == nullptr) return;  // recorded; the engine's next check reports it
    uint32_t* order = reinterpret_cast<uint32_t*>(s + offset);
    const int64_t work = p.n * p.c;
    if (work > 0) {
        const unsigned blocks = elementwise_blocks(work);
        switch (mode) {
            case common::AccumMode::kKahan:
                kahan_leaves_kernel<<<blocks, kElementwiseThreads, 0, stream()>>>(
                    dy, reinterpret_cast<common::KahanSum*>(s), p);
                break;
            case common::AccumMode::kExact:
                exact_leaves_kernel<<<blocks, kElementwiseThreads, 0, stream()>>>(
                    dy, reinterpret_cast<common::ExactAcc*>(s), p);
                break;
            default:
                leaves_kernel<<<blocks, kElementwiseThreads, 0, stream()>>>(
                    dy, reinterpret_cast<float*>(s), p);
                break;
        }
        check_launch("bias_add_backward (leaves)");
    }
    if (mode == common::AccumMode::kPermuted) {
        order_kernel<<<1, 1, 0, stream()>>>(order, p);
        check_launch("bias_add_backward (order)");
    }
    combine_kernel<<<elementwise_blocks(p.c), kElementwiseThreads, 0, stream()>>>(
        reinterpret_cast<const float*>(s), reinterpret_cast<const common::KahanSum*>(s),
        reinterpret_cast<const common::ExactAcc*>(s), order, db, p);
    check_launch("bias_add_backward (combine)");
}

}  // namespace dt::kernels::cuda
