// SPDX-License-Identifier: MIT
// Layer normalisation on the GPU: the launchers of layer_norm_bodies.h on the engine's stream.
// Forward: one launch of the row block program (both row sums, mean, rstd and y). Backward:
// dgamma and dbeta as the per-channel totals of channel_totals.cuh (a row per sequence and
// feature; a split batch's part hands its exact totals on), then dx by the row block program.
// kPermuted draws its orders on the device: the sequences' inside channel_totals, the leaves' (L
// items, same key) into scratch after it.
#include "kernels/cuda/channel_totals.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/layer_norm_bodies.h"

namespace dt::kernels::cuda {

namespace {

__global__ void __launch_bounds__(kLnThreads)
    forward_kernel(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                   float* rstd, LayerNormParams p, const uint32_t* order) {
    __shared__ float shared[kLnSharedFloats];
    ln_forward_block(GridPos::here(), shared, DeviceSync{}, x, gamma, beta, y, mean, rstd, p,
                     order);
}

__global__ void __launch_bounds__(kLnThreads)
    dx_kernel(const float* dy, const float* x, const float* mean, const float* rstd,
              const float* gamma, float* dx, LayerNormParams p, const uint32_t* order) {
    __shared__ float shared[kLnSharedFloats];
    ln_backward_dx_block(GridPos::here(), shared, DeviceSync{}, dy, x, mean, rstd, gamma, dx, p,
                         order);
}

/// The row sums' leaf order of kPermuted (device scratch), else null. False when out of memory.
bool row_order(const LayerNormParams& p, const uint32_t** order) {
    *order = permuted_order(p.accum, layer_norm_leaves(p.C));
    return p.accum.mode != common::AccumMode::kPermuted || *order != nullptr;
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd, const LayerNormParams& p) {
    if (p.M <= 0 || p.C <= 0) return;
    const uint32_t* order = nullptr;
    if (!row_order(p, &order)) return;  // recorded; the engine's next check reports it
    forward_kernel<<<ln_grid(p.M), kLnThreads, 0, stream()>>>(x, gamma, beta, y, mean, rstd, p,
                                                              order);
    check_launch("layer_norm_forward");
}

void layer_norm_backward(const float* dy, const float* x, const float* mean, const float* rstd,
                         const float* gamma, float* dx, float* dgamma, float* dbeta,
                         const LayerNormParams& p) {
    if (p.M <= 0 || p.C <= 0) return;
    // A part of a split batch (exact mode): its unrounded totals added to exact_dbeta/dgamma
    // (channel_part_body), and where one is set that output is not written.
    ChannelPart split;
    if (p.accum.mode == common::AccumMode::kExact)
        split.sink.sum[0] = p.exact_dbeta, split.sink.sum[1] = p.exact_dgamma;
    const bool is_part = split.sink.sum[0] != nullptr || split.sink.sum[1] != nullptr;
    const ChannelSums out{{split.sink.sum[0] != nullptr ? nullptr : dbeta,
                           split.sink.sum[1] != nullptr ? nullptr : dgamma},
                          {}};
    // ORDER: dbeta = G(dy), dgamma = G(dy * xhat) (channel_totals: slot 0 of the scratch, done
    // with before the leaves' order below takes it, in stream order).
    channel_totals<2>("layer_norm_backward (dgamma, dbeta)",
                      LnGradTerm{x, dy, mean, rstd, p.T, p.C}, ln_grad_totals(p), out,
                      is_part ? &split : nullptr);
    const uint32_t* order = nullptr;
    if (!row_order(p, &order)) return;
    dx_kernel<<<ln_grid(p.M), kLnThreads, 0, stream()>>>(dy, x, mean, rstd, gamma, dx, p, order);
    check_launch("layer_norm_backward (dx)");
}

}  // namespace dt::kernels::cuda
