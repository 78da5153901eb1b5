// SPDX-License-Identifier: MIT
// dt::layer_norm: validation, the autograd record and the kernels of kernels/layer_norm.h through
// the device's kernel table. Saved for backward: x, gamma and each token's mean and rstd from the
// forward; the backward recomputes xhat from them bit for bit; beta too, the key of a split
// batch's accumulators. In a split batch at exact ln.grad (engine/runtime/batch_split.h),
// dgamma and dbeta are the part's unrounded sums added to the split's accumulators: no float
// gradient, rounded once at the step's end to the whole batch's bits. dx is per token.
#include "engine/ops/layer_norm.h"

#include <cmath>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

namespace {

void check_feature_vector(const Tensor& t, const char* what, const Tensor& x, int64_t C) {
    ops_detail::check_f32(t, "layer_norm", what, 1);
    DT_CHECK_SHAPE(t.dim(0) == C, "layer_norm: ", what, " has ", t.dim(0), " entries but x ",
                   x.str(), " has ", C, " features (hint: ", what, " must have shape [", C, "])");
    DT_CHECK_T(DeviceError, t.device() == x.device(), "layer_norm: ", what, " ", t.str(),
               " is not on x's device (x is ", x.str(), ")");
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t seq_len,
                  float eps) {
    ops_detail::check_f32(x, "layer_norm", "input x");
    DT_CHECK_SHAPE(x.ndim() == 2 || x.ndim() == 3,
                   "layer_norm: x must be (M, C) or (B, T, C), got ", x.str());
    const int64_t C = x.dim(x.ndim() - 1), M = C > 0 ? x.numel() / C : 0;
    DT_CHECK_SHAPE(C > 0, "layer_norm: x ", x.str(), " has no features to normalise over");
    check_feature_vector(gamma, "gamma", x, C);
    check_feature_vector(beta, "beta", x, C);
    DT_CHECK_VALUE(seq_len >= 1, "layer_norm: seq_len must be >= 1, got ", seq_len);
    DT_CHECK_SHAPE(x.ndim() == 2 || x.dim(1) == seq_len, "layer_norm: x ", x.str(),
                   " has sequences of ", x.dim(1), " tokens but seq_len is ", seq_len);
    DT_CHECK_SHAPE(M % seq_len == 0, "layer_norm: x ", x.str(), " has ", M,
                   " tokens, not a whole number of sequences of seq_len = ", seq_len,
                   " (hint: M = B * T)");
    DT_CHECK_VALUE(std::isfinite(eps) && eps >= 0.0f,
                   "layer_norm: eps must be a finite value >= 0, got ", eps);

    kernels::LayerNormParams p;
    p.M = M, p.C = C, p.T = seq_len, p.eps = eps;
    p.accum = accum_spec_for_call(ReduceSite::kLnStats);  // one spec (key) per call
    const kernels::KernelTable& k = device_kernels(x.device());
    Tensor y = ops_detail::empty_like_device(x.shape(), x);
    Tensor mean = ops_detail::empty_like_device({M}, x);
    Tensor rstd = ops_detail::empty_like_device({M}, x);
    k.layer_norm_forward(x.f32(), gamma.f32(), beta.f32(), y.f32(), mean.f32(), rstd.f32(), p);
    // The probe compares mean and rstd per mode.
    ops_detail::probe_rerun(
        x, ReduceSite::kLnStats, 2 * M, p, [&](const kernels::LayerNormParams& r, float* o) {
            std::vector<float> yy(static_cast<std::size_t>(x.numel()));
            k.layer_norm_forward(x.f32(), gamma.f32(), beta.f32(), yy.data(), o, o + M, r);
        });
    if (autograd::needs_grad({x, gamma, beta})) {
        autograd::record(
            y, "layer_norm", {x, gamma, beta}, [x, gamma, beta, mean, rstd, p](const Tensor& dy) {
                kernels::LayerNormParams q = p;
                q.accum = accum_spec_for_call(ReduceSite::kLnGrad);
                // A split batch at an exact site: this part's unrounded sums go to the split.
                q.exact_dgamma = split_exact_grad(gamma, q.accum);
                q.exact_dbeta = split_exact_grad(beta, q.accum);
                Tensor dx = ops_detail::empty_like_device(x.shape(), x), dgamma, dbeta;
                if (q.exact_dgamma == nullptr) dgamma = ops_detail::empty_like_device({q.C}, x);
                if (q.exact_dbeta == nullptr) dbeta = ops_detail::empty_like_device({q.C}, x);
                const kernels::KernelTable& kb = device_kernels(x.device());
                kb.layer_norm_backward(dy.f32(), x.f32(), mean.f32(), rstd.f32(), gamma.f32(),
                                       dx.f32(), dgamma.defined() ? dgamma.f32() : nullptr,
                                       dbeta.defined() ? dbeta.f32() : nullptr, q);
                // The probe compares dgamma and dbeta per mode.
                ops_detail::probe_rerun(
                    x, ReduceSite::kLnGrad, 2 * q.C, q,
                    [&](const kernels::LayerNormParams& r, float* o) {
                        std::vector<float> d(static_cast<std::size_t>(x.numel()));
                        kb.layer_norm_backward(dy.f32(), x.f32(), mean.f32(), rstd.f32(),
                                               gamma.f32(), d.data(), o, o + q.C, r);
                    });
                return std::vector<Tensor>{dx, dgamma, dbeta};
            });
    }
    return y;
}

}  // namespace dt
