// SPDX-License-Identifier: MIT
// dt::batchnorm2d: validation, running-statistics update, the autograd record and the kernels of
// kernels/batchnorm2d.h through the device's kernel table. Saved for backward: x, gamma, the
// per-channel mean and invstd used in the forward (batch or running statistics); backward
// recomputes xhat from them bit for bit.
#include "engine/ops/batchnorm2d.h"

#include <cmath>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

namespace {

void check_channel_vector(const Tensor& t, const char* what, const Tensor& x) {
    const int64_t C = x.dim(1);
    ops_detail::check_f32(t, "batchnorm2d", what, 1);
    DT_CHECK_SHAPE(t.dim(0) == C, "batchnorm2d: ", what, " has ", t.dim(0), " entries but x has ",
                   C, " channels (hint: ", what, " must have shape [", C, "])");
    DT_CHECK_T(DeviceError, t.device() == x.device(), "batchnorm2d: ", what, " ", t.str(),
               " is not on x's device (x is ", x.str(), ")");
}

}  // namespace

Tensor batchnorm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                   Tensor& running_mean, Tensor& running_var, const BatchNormOptions& opt) {
    ops_detail::check_f32(x, "batchnorm2d", "input", 4);
    const int64_t N = x.dim(0), C = x.dim(1), HW = x.dim(2) * x.dim(3);
    check_channel_vector(gamma, "gamma", x);
    check_channel_vector(beta, "beta", x);
    check_channel_vector(running_mean, "running_mean", x);
    check_channel_vector(running_var, "running_var", x);
    DT_CHECK_VALUE(std::isfinite(opt.eps) && opt.eps >= 0.0f, "batchnorm2d: eps must be a finite "
                   "value >= 0, got ", opt.eps);
    DT_CHECK_VALUE(opt.momentum >= 0.0f && opt.momentum <= 1.0f, "batchnorm2d: momentum must be "
                   "in [0, 1], got ", opt.momentum);
    DT_CHECK_VALUE(!opt.training || N * HW > 1, "batchnorm2d: training needs more than one value "
                   "per channel, got x ", x.str(),
                   " (hint: use a batch of 2 or more, or eval mode)");

    kernels::BatchNorm2dParams p;
    p.N = N, p.C = C, p.HW = HW, p.eps = opt.eps;
    const kernels::KernelTable& k = device_kernels(x.device());
    Tensor y = ops_detail::empty_like_device(x.shape(), x);
    Tensor mean = ops_detail::empty_like_device({C}, x);
    Tensor invstd = ops_detail::empty_like_device({C}, x);
    if (opt.training) {
        p.accum = accum_spec_for_call(ReduceSite::kBnStats);  // one spec (key) per call
        // A split batch with batch-norm sync: statistics over every process's part.
        if (const BatchSplit* split = current_batch_split()) p.parts = split->batchnorm_parts();
        Tensor var = ops_detail::empty_like_device({C}, x);
        k.batchnorm2d_stats(x.f32(), mean.f32(), var.f32(), invstd.f32(), p);
        // The probe compares mean and variance per mode.
        ops_detail::probe_rerun(x, ReduceSite::kBnStats, 2 * C, p,
                                [&](const kernels::BatchNorm2dParams& r, float* o) {
                                    std::vector<float> is(static_cast<std::size_t>(C));
                                    k.batchnorm2d_stats(x.f32(), o, o + C, is.data(), r);
                                });
        k.batchnorm2d_update_running(running_mean.f32(), running_var.f32(), mean.f32(), var.f32(),
                                     opt.momentum, p);
    } else {
        mean.copy_from(running_mean);  // a copy: later updates must not change backward
        k.batchnorm2d_invstd(running_var.f32(), invstd.f32(), p);
    }
    k.batchnorm2d_apply(x.f32(), mean.f32(), invstd.f32(), gamma.f32(), beta.f32(), y.f32(), p);
    if (autograd::needs_grad({x, gamma, beta})) {
        const bool training = opt.training;
        autograd::record(y, "batchnorm2d", {x, gamma, beta},
                         [x, gamma, beta, mean, invstd, training, p](const Tensor& dy) {
            kernels::BatchNorm2dParams q = p;
            q.accum = accum_spec_for_call(ReduceSite::kBnBackward);
            // A split batch at an exact site: this part's unrounded sums go to the split.
            q.exact_dgamma = split_exact_grad(gamma, q.accum);
            q.exact_dbeta = split_exact_grad(beta, q.accum);
            Tensor dx = ops_detail::empty_like_device(x.shape(), x);
            Tensor dgamma = ops_detail::empty_like_device({q.C}, x);
            Tensor dbeta = ops_detail::empty_like_device({q.C}, x);
            device_kernels(x.device())
                .batchnorm2d_backward(dy.f32(), x.f32(), mean.f32(), invstd.f32(), gamma.f32(),
                                      dx.f32(), dgamma.f32(), dbeta.f32(), training, q);
            // The probe compares dgamma and dbeta per mode.
            ops_detail::probe_rerun(
                x, ReduceSite::kBnBackward, 2 * q.C, q,
                [&](const kernels::BatchNorm2dParams& r, float* o) {
                    std::vector<float> d(static_cast<std::size_t>(x.numel()));
                    device_kernels(x.device())
                        .batchnorm2d_backward(dy.f32(), x.f32(), mean.f32(), invstd.f32(),
                                              gamma.f32(), d.data(), o, o + q.C, training, r);
                });
            if (q.exact_dgamma != nullptr) dgamma = Tensor();
            if (q.exact_dbeta != nullptr) dbeta = Tensor();
            return std::vector<Tensor>{dx, dgamma, dbeta};
        });
    }
    return y;
}

}  // namespace dt
