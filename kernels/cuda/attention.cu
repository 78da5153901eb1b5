// SPDX-License-Identifier: MIT
// Causal self-attention on the GPU: the launchers of attention_bodies.h on the engine's stream.
// Forward: row maxima, leaves (a thread per row and key block), then a thread per row combines.
// Backward: every Di, then dQ's leaves and combine, then dK's and dV's. Scratch (slot 0): Di,
// the permuted mode's orders, and the leaves: floats (tree, permuted), KahanSums (kahan) or
// exact accumulators per row element (exact, zeroed first); the atomic mode adds into the
// zeroed outputs and needs no leaves. The simple first version: correct bits, not yet speed.
#include <cstddef>

#include "kernels/cuda/attention_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

namespace {

__global__ void orders_kernel(uint32_t* table, int64_t most, uint64_t key) {
    attention_orders_body(GridPos::here(), table, most, key);
}
__global__ void rowmax_kernel(const float* qkv, float* rowmax, AttentionParams p) {
    attention_rowmax_body(GridPos::here(), qkv, rowmax, p);
}
__global__ void forward_leaves_kernel(const float* qkv, const float* rowmax, float* out,
                                      float* rowsum, AttnLeaves L, AttentionParams p) {
    attention_forward_leaves_body(GridPos::here(), qkv, rowmax, out, rowsum, L, p);
}
__global__ void forward_combine_kernel(AttnLeaves L, const uint32_t* orders, float* out,
                                       float* rowsum, AttentionParams p) {
    attention_forward_combine_body(GridPos::here(), L, orders, out, rowsum, p);
}
__global__ void di_kernel(const float* dout, const float* out, float* di, AttentionParams p) {
    attention_di_body(GridPos::here(), dout, out, di, p);
}
__global__ void dq_leaves_kernel(const float* qkv, const float* dout, const float* rowmax,
                                 const float* rowsum, const float* di, float* dqkv, AttnLeaves L,
                                 AttentionParams p) {
    attention_dq_leaves_body(GridPos::here(), qkv, dout, rowmax, rowsum, di, dqkv, L, p);
}
__global__ void dkv_leaves_kernel(const float* qkv, const float* dout, const float* rowmax,
                                  const float* rowsum, const float* di, float* dqkv, AttnLeaves L,
                                  AttentionParams p) {
    attention_dkv_leaves_body(GridPos::here(), qkv, dout, rowmax, rowsum, di, dqkv, L, p);
}
__global__ void grad_combine_kernel(AttnLeaves L, const uint32_t* orders, float* dqkv, bool keys,
                                    AttentionParams p) {
    attention_grad_combine_body(GridPos::here(), L, orders, dqkv, keys, p);
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The scratch of one call: `head` bytes first (the backward's Di), the orders, the leaves of
/// W elements per leaf (W per row for exact).
struct Scratch {
    char* head = nullptr;
    const uint32_t* orders = nullptr;
    AttnLeaves leaves;
    std::size_t leaf_bytes = 0;
};
Scratch scratch_for(const AttentionParams& p, std::size_t head, int64_t W) {
    const int64_t rows = attention_rows(p), most = attention_max_blocks(p.T);
    const common::AccumMode mode = p.accum.mode;
    const std::size_t per_row = mode == common::AccumMode::kExact ? sizeof(common::ExactAcc) * W
                                : mode == common::AccumMode::kKahan
                                    ? sizeof(common::KahanSum) * most * W
                                : mode == common::AccumMode::kAtomic ? 0
                                                                     : sizeof(float) * most * W;
    const std::size_t order_bytes =
        mode == common::AccumMode::kPermuted
            ? aligned(sizeof(uint32_t) * static_cast<std::size_t>(attention_order_table_size(most)))
            : 0;
    Scratch s;
    s.leaf_bytes = per_row * static_cast<std::size_t>(rows);
    char* base = static_cast<char*>(scratch(aligned(head) + order_bytes + s.leaf_bytes + 256));
    if (base == nullptr) return s;  // recorded by scratch()
    s.head = base;
    char* leaves = base + aligned(head) + order_bytes;
    if (mode == common::AccumMode::kPermuted) {
        auto* table = reinterpret_cast<uint32_t*>(base + aligned(head));
        orders_kernel<<<elementwise_blocks(most), kElementwiseThreads, 0, stream()>>>(
            table, most, p.accum.permute_key);
        check_launch("attention (permutations)");
        s.orders = table;
    }
    if (mode == common::AccumMode::kExact)
        s.leaves.exact = reinterpret_cast<common::ExactAcc*>(leaves);
    if (mode == common::AccumMode::kKahan)
        s.leaves.kahan = reinterpret_cast<common::KahanSum*>(leaves);
    if (mode == common::AccumMode::kTree || mode == common::AccumMode::kPermuted)
        s.leaves.sums = reinterpret_cast<float*>(leaves);
    return s;
}

}  // namespace

// ---- launchers ----

void attention_forward(const float* qkv, float* out, float* rowmax, float* rowsum,
                       const AttentionParams& p) {
    const int64_t rows = attention_rows(p), items = rows * attention_max_blocks(p.T);
    if (rows == 0) return;
    const Scratch s = scratch_for(p, 0, p.D + 1);
    if (s.head == nullptr) return;
    if (p.accum.mode == common::AccumMode::kExact) device_zero(s.leaves.exact, s.leaf_bytes);
    if (p.accum.mode == common::AccumMode::kAtomic) {  // the leaves are added into the outputs
        device_zero(out, sizeof(float) * static_cast<std::size_t>(p.B * (p.T - p.q0) * p.H * p.D));
        device_zero(rowsum, sizeof(float) * static_cast<std::size_t>(rows));
    }
    launch_elementwise("attention_forward (row max)", rowmax_kernel, rows, qkv, rowmax, p);
    launch_elementwise("attention_forward (leaves)", forward_leaves_kernel, items, qkv,
                       static_cast<const float*>(rowmax), out, rowsum, s.leaves, p);
    launch_elementwise("attention_forward (combine)", forward_combine_kernel, rows, s.leaves,
                       s.orders, out, rowsum, p);
}

void attention_backward(const float* qkv, const float* out, const float* rowmax,
                        const float* rowsum, const float* dout, float* dqkv,
                        const AttentionParams& p) {
    const int64_t rows = attention_rows(p), items = rows * attention_max_blocks(p.T);
    if (rows == 0) return;
    const bool atomic = p.accum.mode == common::AccumMode::kAtomic;
    // The leaves' region serves dQ (D elements a leaf), then dK and dV (2D).
    const Scratch s = scratch_for(p, sizeof(float) * static_cast<std::size_t>(rows), 2 * p.D);
    if (s.head == nullptr) return;
    float* di = reinterpret_cast<float*>(s.head);
    launch_elementwise("attention_backward (Di)", di_kernel, rows, dout, out, di, p);
    if (atomic) device_zero(dqkv, sizeof(float) * static_cast<std::size_t>(rows * 3 * p.D));
    for (const bool keys : {false, true}) {
        if (p.accum.mode == common::AccumMode::kExact) device_zero(s.leaves.exact, s.leaf_bytes);
        launch_elementwise(
            keys ? "attention_backward (dK, dV leaves)" : "attention_backward (dQ leaves)",
            keys ? dkv_leaves_kernel : dq_leaves_kernel, items, qkv, dout, rowmax, rowsum,
            static_cast<const float*>(di), dqkv, s.leaves, p);
        if (atomic) continue;
        launch_elementwise("attention_backward (combine)", grad_combine_kernel, rows, s.leaves,
                           s.orders, dqkv, keys, p);
    }
}

}  // namespace dt::kernels::cuda
