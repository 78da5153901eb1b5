// SPDX-License-Identifier: MIT
// Batch normalisation on the GPU: the launchers of batchnorm2d_bodies.h and the per-channel
// totals of channel_totals.cuh (the backward's two straight into dbeta and dgamma) on the
// engine's stream.
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
__global__ void dx_kernel(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, const float* dbeta, const float* dgamma, float* dx,
                          bool training, BatchNorm2dParams p) {
    bn_backward_dx_body(GridPos::here(), dy, x, mean, invstd, gamma, dbeta, dgamma, dx, training,
                        p);
}

}  // namespace

void batchnorm2d_stats(const float* x, float* mean, float* var, float* invstd,
                       const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    // ORDER: mean = total(x) / count; var = total((x - mean)^2) / count (second pass).
    channel_totals<1>("batchnorm2d_stats (mean)", BnMeanTerm{x, p.HW}, batchnorm_totals(p),
                      ChannelSums{{mean, nullptr}});
    launch_elementwise("batchnorm2d_stats (mean)", mean_kernel, p.C, mean, p);
    channel_totals<1>("batchnorm2d_stats (var)", BnVarTerm{x, mean, p.C, p.HW}, batchnorm_totals(p),
                      ChannelSums{{var, nullptr}});
    launch_elementwise("batchnorm2d_stats (var)", var_invstd_kernel, p.C, var, invstd, p);
}

void batchnorm2d_invstd(const float* var, float* invstd, const BatchNorm2dParams& p) {
    launch_elementwise("batchnorm2d_invstd", invstd_kernel, p.C, var, invstd, p);
}

void batchnorm2d_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, float* y, const BatchNorm2dParams& p) {
    launch_elementwise("batchnorm2d_apply", apply_kernel, p.N * p.C * p.HW, x, mean, invstd, gamma,
                       beta, y, p);
}

void batchnorm2d_update_running(float* running_mean, float* running_var, const float* mean,
                                const float* var, float momentum, const BatchNorm2dParams& p) {
    launch_elementwise("batchnorm2d_update_running", running_kernel, p.C, running_mean, running_var,
                       mean, var, momentum, p);
}

void batchnorm2d_backward(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, float* dx, float* dgamma, float* dbeta, bool training,
                          const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    // ORDER: dbeta = total(dy), dgamma = total(dy * xhat), then dx per element.
    channel_totals<2>("batchnorm2d_backward", BnBackwardTerm{x, dy, mean, invstd, p.C, p.HW},
                      batchnorm_totals(p), ChannelSums{{dbeta, dgamma}});
    launch_elementwise("batchnorm2d_backward (dx)", dx_kernel, p.N * p.C * p.HW, dy, x, mean,
                       invstd, gamma, dbeta, dgamma, dx, training, p);
}

}  // namespace dt::kernels::cuda
