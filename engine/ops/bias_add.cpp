// SPDX-License-Identifier: MIT
// dt::bias_add: validation, the autograd record and the kernels of kernels/bias_add.h through the
// device's kernel table. Backward:
// dx = dy (copied, no arithmetic), db via the bias.grad site.
#include "engine/ops/bias_add.h"

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

Tensor ops_detail::bias_grad(const Tensor& dy, const Tensor& b, int64_t n, int64_t c, int64_t p) {
    kernels::BiasAddParams q{.n = n, .c = c, .p = p,
                             .accum = accum_spec_for_call(ReduceSite::kBiasGrad)};
    q.exact_out = split_exact_grad(b, q.accum);
    if (q.exact_out != nullptr) {  // a part of a split batch: unrounded sums, no float gradient
        device_kernels(dy.device()).bias_add_backward(dy.f32(), nullptr, q);
        return Tensor();
    }
    Tensor db = empty_like_device(b.shape(), dy);
    const kernels::KernelTable& k = device_kernels(dy.device());
    k.bias_add_backward(dy.f32(), db.f32(), q);
    probe_rerun(dy, ReduceSite::kBiasGrad, b.numel(), q,
                [&](const kernels::BiasAddParams& r, float* out) {
                    k.bias_add_backward(dy.f32(), out, r);
                });
    return db;
}

Tensor bias_add(const Tensor& x, const Tensor& b) {
    ops_detail::check_f32(x, "bias_add", "input x");
    ops_detail::check_f32(b, "bias_add", "bias b", 1);
    DT_CHECK_SHAPE(x.ndim() >= 2, "bias_add: x must have at least 2 dimensions (N, C, ...), got ",
                   x.str());
    DT_CHECK_SHAPE(b.dim(0) == x.dim(1), "bias_add: bias has ", b.dim(0), " entries but x has ",
                   x.dim(1), " channels (x is ", shape_str(x.shape()), ", b is ",
                   shape_str(b.shape()), "; hint: b must have shape [", x.dim(1), "])");
    DT_CHECK_T(DeviceError, b.device() == x.device(),
               "bias_add: x and b must be on one device, got x ", x.str(), ", b ", b.str());
    const int64_t n = x.dim(0), c = x.dim(1);
    const kernels::BiasAddParams p{.n = n, .c = c, .p = n * c == 0 ? 0 : x.numel() / (n * c)};
    Tensor y = ops_detail::empty_like_device(x.shape(), x);
    device_kernels(x.device()).bias_add_forward(x.f32(), b.f32(), y.f32(), p);
    if (autograd::needs_grad({x, b})) {
        autograd::record(y, "bias_add", {x, b}, [x, b, p](const Tensor& dy) {
            Tensor dx, db;
            // Identity; a copy, since gradients may later be edited in place.
            if (x.requires_grad()) dx = dy.clone();
            if (b.requires_grad()) db = ops_detail::bias_grad(dy, b, p.n, p.c, p.p);
            return std::vector<Tensor>{dx, db};
        });
    }
    return y;
}

}  // namespace dt
