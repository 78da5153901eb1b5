// SPDX-License-Identifier: MIT
// The elementwise CUDA kernels: relu, gelu, add, bias add, dropout, weight init, and, kBatchItems
// tensors per launch, the SGD and Adam updates (a step's parameters) and the non-finite scan (a
// backward's gradients). Each __global__ function maps blockIdx/threadIdx onto its body in
// elementwise_bodies.h (tested on the host over whole grids); the launchers run on the engine's
// stream and record launch errors for the engine (kernels/cuda/runtime.h). Parameter structs go
// by value into the kernels.
#include <vector>

#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/exact_round.h"
#include "kernels/finite.h"

namespace dt::kernels::cuda {

namespace {

__global__ void gelu_forward_kernel(const float* x, float* y, int64_t n) {
    gelu_forward_body(GridPos::here(), x, y, n);
}
__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, int64_t n) {
    gelu_backward_body(GridPos::here(), x, dy, dx, n);
}
__global__ void relu_forward_kernel(const float* x, float* y, int64_t n) {
    relu_forward_body(GridPos::here(), x, y, n);
}
__global__ void relu_backward_kernel(const float* x, const float* dy, float* dx, int64_t n) {
    relu_backward_body(GridPos::here(), x, dy, dx, n);
}
__global__ void add_forward_kernel(const float* a, const float* b, float* y, int64_t n) {
    add_forward_body(GridPos::here(), a, b, y, n);
}
__global__ void bias_add_forward_kernel(const float* x, const float* b, float* y, BiasAddParams p,
                                        common::ChannelOf channel) {
    bias_add_forward_body(GridPos::here(), x, b, y, p, channel);
}
__global__ void dropout_forward_kernel(const float* x, const int64_t* ids, float* y, uint8_t* mask,
                                       DropoutParams p) {
    dropout_forward_body(GridPos::here(), x, ids, y, mask, p);
}
__global__ void dropout_backward_kernel(const float* dy, const uint8_t* mask, float* dx,
                                        DropoutParams p) {
    dropout_backward_body(GridPos::here(), dy, mask, dx, p);
}
__global__ void init_uniform_kernel(float* v, InitUniformParams p) {
    init_uniform_body(GridPos::here(), v, p);
}
template <class Item>
__global__ void batch_kernel(ItemBatch<Item> b) {
    item_body(GridPos::here(), b.item[blockIdx.y]);
}
__global__ void exact_round_kernel(const common::ExactAcc* accs, int64_t n, float* out) {
    exact_round_body(GridPos::here(), accs, n, out);
}

/// item_body of items[0 .. count): one launch per kBatchItems of them.
template <class Item>
void launch_batched(const char* name, const Item* items, int64_t count) {
    for (int64_t first = 0; first < count; first += kBatchItems) {
        const ItemBatch<Item> b = item_batch(items, count, first);
        const dim3 grid(batch_blocks(b), static_cast<unsigned>(b.count));
        batch_kernel<Item><<<grid, kElementwiseThreads, 0, stream()>>>(b);
        check_launch(name);
    }
}

}  // namespace

void gelu_forward(const float* x, float* y, int64_t n) {
    launch_elementwise("gelu_forward", gelu_forward_kernel, n, x, y, n);
}
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
    launch_elementwise("gelu_backward", gelu_backward_kernel, n, x, dy, dx, n);
}
void relu_forward(const float* x, float* y, int64_t n) {
    launch_elementwise("relu_forward", relu_forward_kernel, n, x, y, n);
}
void relu_backward(const float* x, const float* dy, float* dx, int64_t n) {
    launch_elementwise("relu_backward", relu_backward_kernel, n, x, dy, dx, n);
}
void add_forward(const float* a, const float* b, float* y, int64_t n) {
    launch_elementwise("add_forward", add_forward_kernel, n, a, b, y, n);
}
void bias_add_forward(const float* x, const float* b, float* y, const BiasAddParams& p) {
    launch_elementwise("bias_add_forward", bias_add_forward_kernel, p.n * p.c * p.p, x, b, y, p,
                       common::make_channel_of(p.p, p.c));
}
void dropout_forward(const float* x, const int64_t* sample_ids, float* y, uint8_t* mask,
                     const DropoutParams& p) {
    launch_elementwise("dropout_forward", dropout_forward_kernel, p.N * dropout_groups(p), x,
                       sample_ids, y, mask, p);
}
void dropout_backward(const float* dy, const uint8_t* mask, float* dx, const DropoutParams& p) {
    launch_elementwise("dropout_backward", dropout_backward_kernel, p.N * p.D, dy, mask, dx, p);
}
void init_uniform(float* v, const InitUniformParams& p) {
    launch_elementwise("init_uniform", init_uniform_kernel, p.n, v, p);
}
void sgd_update_each(const SgdTensor* t, int64_t count) {
    launch_batched("sgd_update_each", t, count);
}
void adam_update_each(const AdamTensor* t, int64_t count) {
    launch_batched("adam_update_each", t, count);
}

void exact_round(const common::ExactAcc* accs, int64_t n, float* out) {
    launch_elementwise("exact_round", exact_round_kernel, n, accs, n, out);
}

void first_non_finite_each(const ScanBuffer* b, int64_t count, uint64_t* words) {
    // Each buffer max-combines into its word (zeroed by the caller), kBatchItems buffers per
    // launch; no wait: the engine copies the words back when it wants the answers.
    static_assert(sizeof(uint64_t) == sizeof(unsigned long long));
    auto* w = reinterpret_cast<unsigned long long*>(words);
    std::vector<ScanItem> items(static_cast<std::size_t>(count));
    for (int64_t i = 0; i < count; ++i)
        items[static_cast<std::size_t>(i)] = {b[i].p, b[i].n, w + i};
    launch_batched("first_non_finite_each", items.data(), count);
}

}  // namespace dt::kernels::cuda
