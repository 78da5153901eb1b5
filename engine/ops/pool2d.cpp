// SPDX-License-Identifier: MIT
// dt::maxpool2d / avgpool2d / global_avgpool: validation, the autograd records and the kernels of
// kernels/pool2d.h (relu_maxpool2d: also kernels/relu.h) through the device's kernel table. Saved
// for backward: max pool keeps only the int32 argmax (and x's shape); the average pools keep
// nothing but shapes.
#include "engine/ops/pool2d.h"

#include <limits>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"

namespace dt {

namespace {

/// The rounding-error probe of pool.backward (engine/noise/site_probe.h): the same backward with
/// every mode. argmax null: average pooling.
void probe_pool_backward(const Tensor& dy, const int32_t* argmax, const kernels::Pool2dParams& q) {
    ops_detail::probe_rerun(dy, ReduceSite::kPoolBackward, q.N * q.C * q.H * q.W, q,
                            [&](const kernels::Pool2dParams& r, float* out) {
                                const kernels::KernelTable& k = device_kernels(dy.device());
                                if (argmax != nullptr) {
                                    k.maxpool2d_backward(dy.f32(), argmax, out, r);
                                } else {
                                    k.avgpool2d_backward(dy.f32(), out, r);
                                }
                            });
}

kernels::Pool2dParams pool_params(const Tensor& x, const Pool2dOptions& opt, const char* op) {
    ops_detail::check_f32(x, op, "input", 4);
    DT_CHECK_VALUE(opt.kernel >= 1 && opt.stride >= 1, op, ": kernel and stride must be >= 1, got "
                   "kernel ", opt.kernel, ", stride ", opt.stride);
    DT_CHECK_VALUE(opt.padding >= 0 && 2 * opt.padding <= opt.kernel, op, ": padding must be in "
                   "[0, kernel / 2], got padding ", opt.padding, " with kernel ", opt.kernel,
                   " (hint: larger padding would create windows with no input cell)");
    kernels::Pool2dParams p;
    p.N = x.dim(0), p.C = x.dim(1), p.H = x.dim(2), p.W = x.dim(3);
    p.kernel = opt.kernel, p.stride = opt.stride, p.padding = opt.padding;
    p.Ho = kernels::pool2d_out_size(p.H, p.kernel, p.stride, p.padding);
    p.Wo = kernels::pool2d_out_size(p.W, p.kernel, p.stride, p.padding);
    DT_CHECK_SHAPE(p.H + 2 * p.padding >= p.kernel && p.W + 2 * p.padding >= p.kernel, op,
                   ": input ", x.str(), " is smaller than the kernel ", p.kernel, " with padding ",
                   p.padding, " (hint: H + 2*padding and W + 2*padding must be >= kernel)");
    DT_CHECK_SHAPE(p.H * p.W <= std::numeric_limits<int32_t>::max(), op, ": a plane of ", x.str(),
                   " has more than 2^31 - 1 cells (argmax offsets are int32)");
    return p;
}

}  // namespace

Tensor maxpool2d(const Tensor& x, Pool2dOptions opt) {
    kernels::Pool2dParams p = pool_params(x, opt, "maxpool2d");
    Tensor y = ops_detail::empty_like_device({p.N, p.C, p.Ho, p.Wo}, x);
    Tensor argmax = Tensor::empty({p.N, p.C, p.Ho, p.Wo}, DType::kI32, x.device());
    device_kernels(x.device()).maxpool2d_forward(x.f32(), y.f32(), argmax.data<int32_t>(), p);
    if (autograd::needs_grad({x})) {
        autograd::record(y, "maxpool2d", {x}, [argmax, p](const Tensor& dy) {
            kernels::Pool2dParams q = p;
            q.accum = accum_spec_for_call(ReduceSite::kPoolBackward);
            Tensor dx = ops_detail::empty_like_device({q.N, q.C, q.H, q.W}, dy);
            device_kernels(dy.device())
                .maxpool2d_backward(dy.f32(), argmax.data<int32_t>(), dx.f32(), q);
            probe_pool_backward(dy, argmax.data<int32_t>(), q);
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

Tensor relu_maxpool2d(const Tensor& x, Pool2dOptions opt) {
    kernels::Pool2dParams p = pool_params(x, opt, "relu_maxpool2d");
    const kernels::KernelTable& k = device_kernels(x.device());
    Tensor pooled = ops_detail::empty_like_device({p.N, p.C, p.Ho, p.Wo}, x);  // raw window max
    Tensor argmax = Tensor::empty({p.N, p.C, p.Ho, p.Wo}, DType::kI32, x.device());
    Tensor y = ops_detail::empty_like_device({p.N, p.C, p.Ho, p.Wo}, x);
    k.maxpool2d_forward(x.f32(), pooled.f32(), argmax.data<int32_t>(), p);
    k.relu_forward(pooled.f32(), y.f32(), y.numel());
    if (autograd::needs_grad({x})) {
        autograd::record(y, "relu_maxpool2d", {x}, [pooled, argmax, p](const Tensor& dy) {
            const kernels::KernelTable& kb = device_kernels(dy.device());
            // relu's backward on the pooled size: dy where the window max is > 0, else +0.
            Tensor dyp = ops_detail::empty_like_device(dy.shape(), dy);
            kb.relu_backward(pooled.f32(), dy.f32(), dyp.f32(), dy.numel());
            kernels::Pool2dParams q = p;
            q.accum = accum_spec_for_call(ReduceSite::kPoolBackward);
            Tensor dx = ops_detail::empty_like_device({q.N, q.C, q.H, q.W}, dy);
            kb.maxpool2d_backward(dyp.f32(), argmax.data<int32_t>(), dx.f32(), q);
            probe_pool_backward(dyp, argmax.data<int32_t>(), q);
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

Tensor avgpool2d(const Tensor& x, Pool2dOptions opt) {
    kernels::Pool2dParams p = pool_params(x, opt, "avgpool2d");
    Tensor y = ops_detail::empty_like_device({p.N, p.C, p.Ho, p.Wo}, x);
    device_kernels(x.device()).avgpool2d_forward(x.f32(), y.f32(), p);
    if (autograd::needs_grad({x})) {
        autograd::record(y, "avgpool2d", {x}, [p](const Tensor& dy) {
            kernels::Pool2dParams q = p;
            q.accum = accum_spec_for_call(ReduceSite::kPoolBackward);
            Tensor dx = ops_detail::empty_like_device({q.N, q.C, q.H, q.W}, dy);
            device_kernels(dy.device()).avgpool2d_backward(dy.f32(), dx.f32(), q);
            probe_pool_backward(dy, nullptr, q);
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

Tensor global_avgpool(const Tensor& x) {
    ops_detail::check_f32(x, "global_avgpool", "input", 4);
    const int64_t N = x.dim(0), C = x.dim(1), hw = x.dim(2) * x.dim(3);
    DT_CHECK_SHAPE(hw > 0, "global_avgpool: input ", x.str(), " has no spatial cells");
    Tensor y = ops_detail::empty_like_device({N, C}, x);
    device_kernels(x.device()).global_avgpool_forward(x.f32(), y.f32(), N * C, hw);
    if (autograd::needs_grad({x})) {
        Shape shape = x.shape();
        autograd::record(y, "global_avgpool", {x}, [shape, N, C, hw](const Tensor& dy) {
            Tensor dx = ops_detail::empty_like_device(shape, dy);
            device_kernels(dy.device()).global_avgpool_backward(dy.f32(), dx.f32(), N * C, hw);
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

}  // namespace dt
