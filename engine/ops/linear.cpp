// SPDX-License-Identifier: MIT
// dt::linear: validation, the autograd record and the kernels of kernels/linear.h through the
// device's kernel table. Saved for backward: x and w. Backward (dt::linear_backward) computes
// only the gradients whose inputs require one: dx (site linear.dgrad), dw (linear.wgrad), db
// (bias.grad, kernels/bias_add.h with P = 1).
#include "engine/ops/linear.h"

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

std::vector<Tensor> linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                    const Tensor& dy) {
    const kernels::LinearParams p{.n = x.dim(0), .in = x.dim(1), .out = w.dim(0)};
    ops_detail::check_f32(dy, "linear_backward", "dy", 2);
    DT_CHECK_SHAPE(dy.dim(0) == p.n && dy.dim(1) == p.out, "linear_backward: dy is ",
                   shape_str(dy.shape()), " but the output is [", p.n, ", ", p.out,
                   "] (hint: dy has the shape of linear(x, w, b))");
    const kernels::KernelTable& k = device_kernels(x.device());
    Tensor dx, dw, db;
    if (x.requires_grad()) {
        kernels::LinearParams q = p;
        q.accum = accum_spec_for_call(ReduceSite::kLinearDgrad);
        dx = ops_detail::empty_like_device(x.shape(), x);
        k.linear_backward_data(dy.f32(), w.f32(), dx.f32(), q);
        ops_detail::probe_rerun(x, ReduceSite::kLinearDgrad, x.numel(), p,
                                [&](const kernels::LinearParams& r, float* o) {
                                    k.linear_backward_data(dy.f32(), w.f32(), o, r);
                                });
    }
    if (w.requires_grad()) {
        kernels::LinearParams q = p;
        q.accum = accum_spec_for_call(ReduceSite::kLinearWgrad);
        q.exact_out = split_exact_grad(w, q.accum);  // a split batch: unrounded sums
        if (q.exact_out == nullptr) dw = ops_detail::empty_like_device(w.shape(), x);
        k.linear_backward_weight(x.f32(), dy.f32(), dw.defined() ? dw.f32() : nullptr, q);
        ops_detail::probe_rerun(x, ReduceSite::kLinearWgrad, w.numel(), p,
                                [&](const kernels::LinearParams& r, float* o) {
                                    k.linear_backward_weight(x.f32(), dy.f32(), o, r);
                                });
    }
    if (b.defined() && b.requires_grad()) db = ops_detail::bias_grad(dy, b, p.n, p.out, 1);
    return {dx, dw, db};
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
    ops_detail::check_f32(x, "linear", "input x", 2);
    ops_detail::check_f32(w, "linear", "weight w", 2);
    DT_CHECK_SHAPE(w.dim(1) == x.dim(1), "linear: in-features differ: x is ", shape_str(x.shape()),
                   ", w is ", shape_str(w.shape()),
                   " (expected w.shape[1] == x.shape[1] == ", x.dim(1),
                   "; w is (out_features, in_features) as in PyTorch)");
    const kernels::LinearParams p{.n = x.dim(0), .in = x.dim(1), .out = w.dim(0)};
    ops_detail::check_bias(b, w, p.out, "linear", "output features");
    ops_detail::check_same_device(x, w, b, "linear");
    Tensor y = ops_detail::empty_like_device({p.n, p.out}, x);
    device_kernels(x.device())
        .linear_forward(x.f32(), w.f32(), b.defined() ? b.f32() : nullptr, y.f32(), p);
    if (autograd::needs_grad({x, w, b})) {
        autograd::record(y, "linear", {x, w, b},
                         [x, w, b](const Tensor& dy) { return linear_backward(x, w, b, dy); });
    }
    return y;
}

}  // namespace dt
