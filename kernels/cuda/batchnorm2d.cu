// SPDX-License-Identifier: MIT
// Batch normalisation on the GPU: the launchers of batchnorm2d_bodies.h and the per-channel
// totals of channel_totals.cuh on the engine's stream. The backward's two totals go to a 2C
// device buffer of its own (channel_totals uses the runtime's scratch), then to dbeta, dgamma.
#include "kernels/cuda/batchnorm2d_bodies.h"
#include "kernels/cuda/channel_totals.cuh"

namespace dt::kernels::cuda {

namespace {

__global__ void mean_kernel(float* mean, BatchNorm2dParams p) {
    bn_mean_body(GridPos::here(), mean, p);
}
__global__ void var_invstd_kernel(float* var, float* invstd, BatchNorm2dParams p) {
    bn_var_invstd_body(GridPos::here(), var, invstd, p);
}
__global__ void invstd_kernel(const float* var, float* invstd, BatchNorm2dParams p) {
    bn_invstd_body(GridPos::here(), var, invstd, p);
}
__global__ void apply_kernel(const float* x, const float* mean, const float* invstd,
                             const float* gamma, const float* beta, float* y, BatchNorm2dParams p) {
    bn_apply_body(GridPos::here(), x, mean, invstd, gamma, beta, y, p);
}
__global__ void running_kernel(float* rm, float* rv, const float* mean, const float* var,
                               float momentum, BatchNorm2dParams p) {
    bn_update_running_body(GridPos::here(), rm, rv, mean, var, momentum, p);
}
__global__ void split_kernel(const float* totals, float* dbeta, float* dgamma, int64_t C) {
    common::grid_stride(GridPos::here(), C, [&](int64_t c) {
        dbeta[c] = totals[c];
        dgamma[c] = totals[C + c];
    });
}
__global__ void dx_kernel(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, const float* dbeta, const float* dgamma, float* dx,
                          bool training, BatchNorm2dParams p) {
    bn_backward_dx_body(GridPos::here(), dy, x, mean, invstd, gamma, dbeta, dgamma, dx, training,
                        p);
}

unsigned blocks(int64_t n) { return elementwise_blocks(n); }

}  // namespace

void batchnorm2d_stats(const float* x, float* mean, float* var, float* invstd,
                       const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    // ORDER: mean = total(x) / count; var = total((x - mean)^2) / count (second pass).
    channel_totals<1>("batchnorm2d_stats (mean)", BnMeanTerm{x, p.HW}, batchnorm_totals(p), mean);
    mean_kernel<<<blocks(p.C), kElementwiseThreads, 0, stream()>>>(mean, p);
    check_launch("batchnorm2d_stats (mean)");
    channel_totals<1>("batchnorm2d_stats (var)", BnVarTerm{x, mean, p.C, p.HW}, batchnorm_totals(p),
                      var);
    var_invstd_kernel<<<blocks(p.C), kElementwiseThreads, 0, stream()>>>(var, invstd, p);
    check_launch("batchnorm2d_stats (var)");
}

void batchnorm2d_invstd(const float* var, float* invstd, const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    invstd_kernel<<<blocks(p.C), kElementwiseThreads, 0, stream()>>>(var, invstd, p);
    check_launch("batchnorm2d_invstd");
}

void batchnorm2d_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, float* y, const BatchNorm2dParams& p) {
    const int64_t n = p.N * p.C * p.HW;
    if (n <= 0) return;
    apply_kernel<<<blocks(n), kElementwiseThreads, 0, stream()>>>(x, mean, invstd, gamma, beta, y,
                                                                  p);
    check_launch("batchnorm2d_apply");
}

void batchnorm2d_update_running(float* running_mean, float* running_var, const float* mean,
                                const float* var, float momentum, const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    running_kernel<<<blocks(p.C), kElementwiseThreads, 0, stream()>>>(running_mean, running_var,
                                                                      mean, var, momentum, p);
    check_launch("batchnorm2d_update_running");
}

void batchnorm2d_backward(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, float* dx, float* dgamma, float* dbeta, bool training,
                          const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    // The 2C totals need a buffer of their own: channel_totals uses the runtime's scratch.
    static float* totals = nullptr;
    static int64_t capacity = 0;
    if (2 * p.C > capacity) {
        if (totals != nullptr) device_free(totals);
        totals =
            static_cast<float*>(device_malloc(sizeof(float) * 2 * static_cast<std::size_t>(p.C)));
        capacity = totals != nullptr ? 2 * p.C : 0;
        if (totals == nullptr) {
            note_error("batchnorm2d_backward (cudaMalloc)",
                       static_cast<int>(cudaErrorMemoryAllocation));
            return;
        }
    }
    channel_totals<2>("batchnorm2d_backward", BnBackwardTerm{x, dy, mean, invstd, p.C, p.HW},
                      batchnorm_totals(p), totals);
    split_kernel<<<blocks(p.C), kElementwiseThreads, 0, stream()>>>(totals, dbeta, dgamma, p.C);
    check_launch("batchnorm2d_backward");
    const int64_t n = p.N * p.C * p.HW;
    if (n <= 0) return;
    dx_kernel<<<blocks(n), kElementwiseThreads, 0, stream()>>>(dy, x, mean, invstd, gamma, dbeta,
                                                               dgamma, dx, training, p);
    check_launch("batchnorm2d_backward (dx)");
}

}  // namespace dt::kernels::cuda
