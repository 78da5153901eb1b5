// SPDX-License-Identifier: MIT
// Batch normalisation on the GPU: the launchers of batchnorm2d_bodies.h and the per-channel
// totals of channel_totals.cuh (the backward's two straight into dbeta and dgamma) on the
// engine's stream; a part of a split batch (p.parts, p.exact_dbeta/dgamma) as
// kernels/batchnorm2d.h says, its totals completed through the host (ChannelPart).
#include "kernels/cuda/batchnorm2d_bodies.h"
#include "kernels/cuda/channel_totals.cuh"

namespace dt::kernels::cuda {

namespace {

__global__ void finish_kernel(float* total, ChannelFinish f, int64_t C) {
    channel_finish_body(GridPos::here(), total, f, C);
}
__global__ void invstd_kernel(const float* var, float* invstd, BatchNorm2dParams p) {
    bn_invstd_body(GridPos::here(), var, invstd, p);
}
__global__ void apply_kernel(const float* x, const float* mean, const float* invstd,
                             const float* gamma, const float* beta, float* y, BatchNorm2dParams p,
                             common::ChannelOf channel) {
    bn_apply_body(GridPos::here(), x, mean, invstd, gamma, beta, y, p, channel);
}
__global__ void running_kernel(float* rm, float* rv, const float* mean, const float* var,
                               float momentum, float count, BatchNorm2dParams p) {
    bn_update_running_body(GridPos::here(), rm, rv, mean, var, momentum, count, p);
}
__global__ void dx_kernel(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, const float* dbeta, const float* dgamma, float* dx,
                          bool training, float count, BatchNorm2dParams p,
                          common::ChannelOf channel) {
    bn_backward_dx_body(GridPos::here(), dy, x, mean, invstd, gamma, dbeta, dgamma, dx, training,
                        count, p, channel);
}

/// The kernels' copy of p: without the host pointer `parts` (the launchers use it).
BatchNorm2dParams on_device(const BatchNorm2dParams& p) {
    BatchNorm2dParams q = p;
    q.parts = nullptr;
    q.exact_dgamma = q.exact_dbeta = nullptr;
    return q;
}

}  // namespace

void batchnorm2d_stats(const float* x, float* mean, float* var, float* invstd,
                       const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    // A part of a split batch: the totals over every part (the hook), count = theirs.
    ChannelPart whole;
    whole.parts = p.parts;
    const ChannelPart* part = p.parts != nullptr ? &whole : nullptr;
    const float count = batchnorm2d_count(p);
    // ORDER: mean = total(x) / count; var = total((x - mean)^2) / count (second pass). The
    // combine that stores a total finishes it (ChannelSums::finish); the atomic mode's totals,
    // added as they come, and a part's, completed through the host after, by a kernel after.
    const bool finish_in_combine = part == nullptr && p.accum.mode != common::AccumMode::kAtomic;
    const auto totals_then_finish = [&](const char* name, const auto& term, float* total,
                                        const ChannelFinish& f) {
        ChannelSums out{{total, nullptr}, {}};
        if (finish_in_combine) out.finish = f;
        channel_totals<1>(name, term, batchnorm_totals(p), out, part);
        if (!finish_in_combine) launch_elementwise(name, finish_kernel, p.C, total, f, p.C);
    };
    totals_then_finish("batchnorm2d_stats (mean)", BnMeanTerm{x, p.HW}, mean,
                       bn_mean_finish(count));
    totals_then_finish("batchnorm2d_stats (var)", BnVarTerm{x, mean, p.HW}, var,
                       bn_var_finish(count, invstd, p));
}

void batchnorm2d_invstd(const float* var, float* invstd, const BatchNorm2dParams& p) {
    launch_elementwise("batchnorm2d_invstd", invstd_kernel, p.C, var, invstd, on_device(p));
}

void batchnorm2d_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, float* y, const BatchNorm2dParams& p) {
    launch_elementwise("batchnorm2d_apply", apply_kernel, p.N * p.C * p.HW, x, mean, invstd, gamma,
                       beta, y, on_device(p), common::make_channel_of(p.HW, p.C));
}

void batchnorm2d_update_running(float* running_mean, float* running_var, const float* mean,
                                const float* var, float momentum, const BatchNorm2dParams& p) {
    launch_elementwise("batchnorm2d_update_running", running_kernel, p.C, running_mean, running_var,
                       mean, var, momentum, batchnorm2d_count(p), on_device(p));
}

void batchnorm2d_backward(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, float* dx, float* dgamma, float* dbeta, bool training,
                          const BatchNorm2dParams& p) {
    if (p.C <= 0) return;
    // A part of a split batch: its unrounded exact totals added to exact_dbeta/dgamma; with
    // parts, dbeta and dgamma are its own totals and dx takes those of every part (the hook),
    // held in scratch slot 1 (channel_totals uses slot 0).
    ChannelPart split;
    split.sink.sum[0] = p.exact_dbeta, split.sink.sum[1] = p.exact_dgamma;
    ChannelSums totals{{dbeta, dgamma}, {}};
    if (p.parts != nullptr) {
        auto* whole =
            static_cast<float*>(scratch(sizeof(float) * 2 * static_cast<std::size_t>(p.C), 1));
        if (whole == nullptr) return;  // recorded; the engine's next check reports it
        split.local = totals;
        split.parts = p.parts;
        totals = ChannelSums{{whole, whole + p.C}, {}};
    }
    const bool is_part = p.parts != nullptr || p.exact_dbeta != nullptr;
    // ORDER: dbeta = total(dy), dgamma = total(dy * xhat), then dx per element.
    channel_totals<2>("batchnorm2d_backward", BnBackwardTerm{x, dy, mean, invstd, p.HW},
                      batchnorm_totals(p), totals, is_part ? &split : nullptr);
    launch_elementwise("batchnorm2d_backward (dx)", dx_kernel, p.N * p.C * p.HW, dy, x, mean,
                       invstd, gamma, static_cast<const float*>(totals.sum[0]),
                       static_cast<const float*>(totals.sum[1]), dx, training, batchnorm2d_count(p),
                       on_device(p), common::make_channel_of(p.HW, p.C));
}

}  // namespace dt::kernels::cuda
