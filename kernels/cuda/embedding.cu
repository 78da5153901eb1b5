// SPDX-License-Identifier: MIT
// embedding on the GPU: the launchers of embedding_bodies.h on the engine's stream. The backward
// (every mode but atomic) sorts the rows by (id, sequence) in scratch, [start: V * B + 1 int32 |
// rows: M int32 | pi: B uint32], then a thread per dtable element sums its runs as the mode says.
// atomic: dtable zeroed, then a thread per dy element adds it with an atomic add.
#include "kernels/cuda/embedding_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

namespace {

__global__ void forward_kernel(const int64_t* ids, const float* table, float* y, int64_t M,
                               common::Divisor C) {
    embedding_forward_body(GridPos::here(), ids, table, y, M, C);
}
__global__ void count_kernel(const int64_t* ids, EmbedSort s, EmbeddingParams p,
                             common::Divisor T) {
    embed_count_body(GridPos::here(), ids, s, p, T);
}
__global__ void scan_kernel(int32_t* start, int64_t n) {
    __shared__ int32_t shared[kEmbedScanThreads + 1];
    embed_scan_block(GridPos::here(), shared, DeviceSync{}, start, n);
}
__global__ void place_kernel(const int64_t* ids, EmbedSort s, EmbeddingParams p,
                             common::Divisor T) {
    embed_place_body(GridPos::here(), ids, s, p, T);
}
__global__ void grad_kernel(const float* dy, EmbedSort s, const uint32_t* order, float* dtable,
                            EmbeddingParams p, common::Divisor C) {
    embedding_grad_body(GridPos::here(), dy, s, order, dtable, p, C);
}
__global__ void atomic_kernel(const int64_t* ids, const float* dy, float* dtable, int64_t M,
                              common::Divisor C) {
    embedding_atomic_body(GridPos::here(), ids, dy, dtable, M, C);
}

std::size_t padded(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void embedding_forward(const int64_t* ids, const float* table, float* y, const EmbeddingParams& p) {
    launch_elementwise("embedding_forward", forward_kernel, p.M * p.C, ids, table, y, p.M,
                       common::make_divisor(p.C));
}

void embedding_backward(const int64_t* ids, const float* dy, float* dtable,
                        const EmbeddingParams& p) {
    const char* name = "embedding_backward";
    if (p.V * p.C <= 0) return;
    const common::Divisor C = common::make_divisor(p.C);
    if (p.accum.mode == common::AccumMode::kAtomic) {
        cudaMemsetAsync(dtable, 0, sizeof(float) * static_cast<std::size_t>(p.V * p.C), stream());
        launch_elementwise(name, atomic_kernel, p.M * p.C, ids, dy, dtable, p.M, C);
        return;
    }
    const int64_t B = embedding_sequences(p), keys = p.V * B;
    const std::size_t start_bytes = padded(sizeof(int32_t) * static_cast<std::size_t>(keys + 1));
    const std::size_t rows_bytes = padded(sizeof(int32_t) * static_cast<std::size_t>(p.M));
    char* s = static_cast<char*>(
        scratch(start_bytes + rows_bytes + sizeof(uint32_t) * static_cast<std::size_t>(B + 1)));
    if (s == nullptr) return;  // recorded; the engine's next check reports it
    const EmbedSort sort{reinterpret_cast<int32_t*>(s),
                         reinterpret_cast<int32_t*>(s + start_bytes)};
    uint32_t* order = reinterpret_cast<uint32_t*>(s + start_bytes + rows_bytes);
    cudaMemsetAsync(sort.start, 0, sizeof(int32_t) * static_cast<std::size_t>(keys + 1), stream());
    if (p.M > 0) {
        const common::Divisor T = common::make_divisor(p.T);
        launch_elementwise(name, count_kernel, p.M, ids, sort, p, T);
        scan_kernel<<<1, kEmbedScanThreads, 0, stream()>>>(sort.start, keys);
        check_launch(name);
        launch_elementwise(name, place_kernel, p.M, ids, sort, p, T);
    }
    if (p.accum.mode == common::AccumMode::kPermuted && B > 0)
        permutation_into(order, B, p.accum.permute_key);
    launch_elementwise(name, grad_kernel, p.V * p.C, dy, sort, static_cast<const uint32_t*>(order),
                       dtable, p, C);
}

}  // namespace dt::kernels::cuda
