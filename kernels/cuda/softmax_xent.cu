// SPDX-License-Identifier: MIT
// Softmax cross-entropy and argmax on the GPU: the launchers of softmax_xent_bodies.h on the
// engine's stream. Forward: rows kernel, then a one-thread kernel for the site total (its
// scratch: the atomic total and, for kPermuted, the order of N indices).
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/softmax_xent_bodies.h"

namespace dt::kernels::cuda {

namespace {

__global__ void rows_kernel(const float* logits, const int64_t* labels, float* rowmax,
                            float* rowsum, float* loss_rows, float* atomic_total,
                            SoftmaxXentParams p) {
    softmax_xent_rows_body(GridPos::here(), logits, labels, rowmax, rowsum, loss_rows, atomic_total,
                           p);
}
__global__ void total_kernel(const float* loss_rows, const float* atomic_total, float* loss,
                             uint32_t* order, SoftmaxXentParams p) {
    softmax_xent_total_body(GridPos::here(), loss_rows, atomic_total, loss, order, p);
}
__global__ void backward_kernel(const float* logits, const int64_t* labels, const float* rowmax,
                                const float* rowsum, const float* dloss, float* dlogits,
                                SoftmaxXentParams p) {
    softmax_xent_backward_body(GridPos::here(), logits, labels, rowmax, rowsum, dloss, dlogits, p);
}
__global__ void argmax_kernel(const float* x, int64_t* out, int64_t N, int64_t K) {
    argmax_rows_body(GridPos::here(), x, out, N, K);
}

}  // namespace

void softmax_xent_forward(const float* logits, const int64_t* labels, float* rowmax, float* rowsum,
                          float* loss_rows, float* loss, const SoftmaxXentParams& p) {
    // Scratch: [atomic total (float), pad to 16 bytes][order: N uint32].
    char* s = static_cast<char*>(scratch(16 + sizeof(uint32_t) * static_cast<std::size_t>(p.N)));
    if (s == nullptr) return;  // recorded; the engine's next check reports it
    float* atomic_total = reinterpret_cast<float*>(s);
    uint32_t* order = reinterpret_cast<uint32_t*>(s + 16);
    cudaMemsetAsync(atomic_total, 0, sizeof(float), stream());  // +0
    launch_elementwise("softmax_xent_forward (rows)", rows_kernel, p.N, logits, labels, rowmax,
                       rowsum, loss_rows, atomic_total, p);
    total_kernel<<<1, 1, 0, stream()>>>(loss_rows, atomic_total, loss, order, p);
    check_launch("softmax_xent_forward (total)");
}

void softmax_xent_backward(const float* logits, const int64_t* labels, const float* rowmax,
                           const float* rowsum, const float* dloss, float* dlogits,
                           const SoftmaxXentParams& p) {
    launch_elementwise("softmax_xent_backward", backward_kernel, p.N * p.K, logits, labels, rowmax,
                       rowsum, dloss, dlogits, p);
}

void argmax_rows(const float* x, int64_t* out, int64_t N, int64_t K) {
    launch_elementwise("argmax_rows", argmax_kernel, N, x, out, N, K);
}

}  // namespace dt::kernels::cuda
