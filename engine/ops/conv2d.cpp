// SPDX-License-Identifier: MIT
// dt::conv2d: validation, the autograd record and the kernels of kernels/conv2d.h through the
// device's kernel table. Saved for backward: x and w (and whether b exists). Backward computes only
// the gradients whose inputs require one: dx (site conv.dgrad), dw (conv.wgrad), db (bias.grad,
// kernels/bias_add.h).
#include "engine/ops/conv2d.h"

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

namespace {

kernels::Conv2dParams conv2d_params(const Tensor& x, const Tensor& w, Conv2dOptions opt) {
    ops_detail::check_f32(x, "conv2d", "input x", 4);
    ops_detail::check_f32(w, "conv2d", "weight w", 4);
    DT_CHECK_SHAPE(w.dim(1) == x.dim(1), "conv2d: input channels differ: x is ",
                   shape_str(x.shape()), ", w is ", shape_str(w.shape()),
                   " (expected w.shape[1] == x.shape[1] == ", x.dim(1),
                   "; w is (out_channels, in_channels, kh, kw))");
    DT_CHECK_VALUE(opt.stride >= 1, "conv2d: stride must be >= 1, got ", opt.stride);
    DT_CHECK_VALUE(opt.padding >= 0, "conv2d: padding must be >= 0, got ", opt.padding);
    DT_CHECK_SHAPE(w.dim(2) >= 1 && w.dim(3) >= 1, "conv2d: empty kernel, w is ",
                   shape_str(w.shape()));
    kernels::Conv2dParams p;
    p.n = x.dim(0), p.ci = x.dim(1), p.h = x.dim(2), p.w = x.dim(3);
    p.co = w.dim(0), p.kh = w.dim(2), p.kw = w.dim(3);
    p.stride = opt.stride, p.pad = opt.padding;
    DT_CHECK_SHAPE(p.h + 2 * p.pad >= p.kh && p.w + 2 * p.pad >= p.kw,
                   "conv2d: kernel ", p.kh, "x", p.kw, " is larger than the padded input ",
                   p.h + 2 * p.pad, "x", p.w + 2 * p.pad, " (x is ", shape_str(x.shape()),
                   ", padding ", p.pad, "; hint: increase padding or use a smaller kernel)");
    p.ho = (p.h + 2 * p.pad - p.kh) / p.stride + 1;
    p.wo = (p.w + 2 * p.pad - p.kw) / p.stride + 1;
    return p;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Conv2dOptions opt) {
    const kernels::Conv2dParams p = conv2d_params(x, w, opt);
    ops_detail::check_bias(b, w, p.co, "conv2d", "output channels");
    ops_detail::check_same_device(x, w, b, "conv2d");
    Tensor y = ops_detail::empty_like_device({p.n, p.co, p.ho, p.wo}, x);
    device_kernels(x.device())
        .conv2d_forward(x.f32(), w.f32(), b.defined() ? b.f32() : nullptr, y.f32(), p);
    if (autograd::needs_grad({x, w, b})) {
        autograd::record(y, "conv2d", {x, w, b}, [x, w, b, p](const Tensor& dy) {
            const kernels::KernelTable& k = device_kernels(x.device());
            Tensor dx, dw, db;
            if (x.requires_grad()) {
                kernels::Conv2dParams q = p;
                q.accum = accum_spec_for_call(ReduceSite::kConvDgrad);
                dx = ops_detail::empty_like_device(x.shape(), x);
                k.conv2d_backward_data(dy.f32(), w.f32(), dx.f32(), q);
                ops_detail::probe_rerun(x, ReduceSite::kConvDgrad, x.numel(), p,
                                        [&](const kernels::Conv2dParams& r, float* o) {
                                            k.conv2d_backward_data(dy.f32(), w.f32(), o, r);
                                        });
            }
            if (w.requires_grad()) {
                kernels::Conv2dParams q = p;
                q.accum = accum_spec_for_call(ReduceSite::kConvWgrad);
                q.exact_out = split_exact_grad(w, q.accum);  // a split batch: unrounded sums
                if (q.exact_out == nullptr) dw = ops_detail::empty_like_device(w.shape(), x);
                k.conv2d_backward_weight(x.f32(), dy.f32(), dw.defined() ? dw.f32() : nullptr, q);
                ops_detail::probe_rerun(x, ReduceSite::kConvWgrad, w.numel(), p,
                                        [&](const kernels::Conv2dParams& r, float* o) {
                                            k.conv2d_backward_weight(x.f32(), dy.f32(), o, r);
                                        });
            }
            if (b.defined() && b.requires_grad())
                db = ops_detail::bias_grad(dy, b, p.n, p.co, p.ho * p.wo);
            return std::vector<Tensor>{dx, dw, db};
        });
    }
    return y;
}

}  // namespace dt
