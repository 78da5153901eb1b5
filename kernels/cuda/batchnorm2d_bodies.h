// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA batch-norm kernels (kernels/cuda/batchnorm2d.cu), host-device,
// tested on the host over whole grids against the CPU (kernels/batchnorm2d.h's recipe). The
// per-channel totals of the sites bn.stats and bn.backward are channel_totals_bodies.h over the
// terms below (a row per (sample, channel)); every other step is elementwise, per channel or per
// element, with the CPU's formula and order.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/batchnorm2d.h"
#include "kernels/common/divisor.h"
#include "kernels/cuda/channel_totals_bodies.h"

namespace dt::kernels::cuda {

DT_HD ChannelTotals batchnorm_totals(const BatchNorm2dParams& p) {
    return ChannelTotals{p.N, p.C, p.HW, p.accum};
}

struct BnMeanTerm {  // t = x
    const float* x;
    int64_t HW;
    DT_HD void operator()(int64_t r, int64_t, int64_t i, float* t) const { t[0] = x[r * HW + i]; }
};
struct BnVarTerm {  // t = (x - mean) * (x - mean)
    const float* x;
    const float* mean;
    int64_t HW;
    DT_HD void operator()(int64_t r, int64_t c, int64_t i, float* t) const {
        const float d = x[r * HW + i] - mean[c];
        t[0] = d * d;
    }
};
struct BnBackwardTerm {  // t0 = dy, t1 = dy * ((x - mean) * invstd)
    const float* x;
    const float* dy;
    const float* mean;
    const float* invstd;
    int64_t HW;
    DT_HD void operator()(int64_t r, int64_t c, int64_t i, float* t) const {
        const float g = dy[r * HW + i];
        t[0] = g;
        t[1] = g * ((x[r * HW + i] - mean[c]) * invstd[c]);
    }
};

// `count`: batchnorm2d_count(p), computed by the launcher on the host (with a split batch's
// parts, the samples of every part: p.parts is host memory).

/// Batch norm's statistics from their totals (bn.stats, kernels/batchnorm2d.h): mean = total /
/// count; var = total / count and invstd = 1 / sqrt(var + eps). What the combines storing the
/// totals do to them (ChannelSums::finish, channel_totals_bodies.h), or channel_finish_body
/// after the atomic mode's and a split batch's.
inline ChannelFinish bn_mean_finish(float count) {
    return ChannelFinish{true, count, nullptr, 0.0f};
}
inline ChannelFinish bn_var_finish(float count, float* invstd, const BatchNorm2dParams& p) {
    return ChannelFinish{true, count, invstd, p.eps};
}

DT_HD void bn_invstd_body(const GridPos& t, const float* var, float* invstd,
                          const BatchNorm2dParams& p) {
    common::grid_stride(t, p.C, [&](int64_t c) { invstd[c] = bn_invstd_of(var[c], p.eps); });
}

/// `channel`: make_channel_of(p.HW, p.C), made by the launcher (as for the dx below).
DT_HD void bn_apply_body(const GridPos& t, const float* x, const float* mean, const float* invstd,
                         const float* gamma, const float* beta, float* y,
                         const BatchNorm2dParams& p, const common::ChannelOf& channel) {
    common::grid_stride(t, p.N * p.C * p.HW, [&](int64_t i) {
        const int64_t c = channel(i);
        y[i] = ((x[i] - mean[c]) * invstd[c]) * gamma[c] + beta[c];  // ORDER: as the CPU
    });
}

DT_HD void bn_update_running_body(const GridPos& t, float* running_mean, float* running_var,
                                  const float* mean, const float* var, float momentum, float count,
                                  const BatchNorm2dParams& p) {
    const float keep = 1.0f - momentum;
    const float unbias = count / (count - 1.0f);
    common::grid_stride(t, p.C, [&](int64_t c) {
        // ORDER: (keep * running) + (momentum * batch), batch var unbiased as var * unbias.
        running_mean[c] = keep * running_mean[c] + momentum * mean[c];
        running_var[c] = keep * running_var[c] + momentum * (var[c] * unbias);
    });
}

/// dx per element from the totals (totals[c] = total(dy) = dbeta, totals[C + c] = dgamma).
DT_HD void bn_backward_dx_body(const GridPos& t, const float* dy, const float* x, const float* mean,
                               const float* invstd, const float* gamma, const float* dbeta,
                               const float* dgamma, float* dx, bool training, float count,
                               const BatchNorm2dParams& p, const common::ChannelOf& channel) {
    common::grid_stride(t, p.N * p.C * p.HW, [&](int64_t i) {
        const int64_t c = channel(i);
        if (!training) {
            dx[i] = dy[i] * (gamma[c] * invstd[c]);  // ORDER: dy * (gamma * invstd)
            return;
        }
        const float k = (gamma[c] * invstd[c]) / count;
        const float xhat = (x[i] - mean[c]) * invstd[c];
        // ORDER: k * (((count * dy) - dbeta) - (xhat * dgamma))
        dx[i] = k * (((count * dy[i]) - dbeta[c]) - xhat * dgamma[c]);
    });
}

}  // namespace dt::kernels::cuda
