// SPDX-License-Identifier: MIT
// Helpers shared by the public ops: argument checks that every op makes at its boundary. Ops run
// their kernels through the kernel table of their tensors' device (device_kernels,
// engine/core/backend.h), in forward and in backward; outputs live on the inputs' device.
#pragma once
#include "engine/autograd/tape.h"
#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "engine/noise/site_probe.h"
#include "engine/runtime/batch_split.h"

namespace dt::ops_detail {

/// Throws unless t is a defined float32 tensor with `ndim` dimensions (ndim < 0: any).
inline void check_f32(const Tensor& t, const char* op, const char* what, int ndim = -1) {
    DT_CHECK(t.defined(), op, ": ", what, " is undefined");
    DT_CHECK_T(DTypeError, t.dtype() == DType::kF32, op, ": ", what, " must be float32, got ",
               t.str());
    DT_CHECK_SHAPE(ndim < 0 || t.ndim() == ndim, op, ": ", what, " must have ", ndim,
                   " dimensions, got ", t.str());
}

/// Throws unless b is undefined (no bias) or a float32 vector with one entry per output of w;
/// `outputs` names them in the message ("output channels", "output features").
inline void check_bias(const Tensor& b, const Tensor& w, int64_t count, const char* op,
                       const char* outputs) {
    if (!b.defined()) return;
    check_f32(b, op, "bias b", 1);
    DT_CHECK_SHAPE(b.dim(0) == count, op, ": bias has ", b.dim(0), " entries but w has ", count,
                   " ", outputs, " (b is ", shape_str(b.shape()), ", w is ", shape_str(w.shape()),
                   "; hint: b must have shape [", count, "])");
}

/// Throws unless x, w and (if defined) b live on one device.
inline void check_same_device(const Tensor& x, const Tensor& w, const Tensor& b, const char* op) {
    DT_CHECK_T(DeviceError, w.device() == x.device() && (!b.defined() || b.device() == x.device()),
               op, ": x, w and b must be on one device, got x ", x.str(), ", w ", w.str(),
               b.defined() ? ", b " + b.str() : std::string());
}

/// An uninitialised float32 tensor on x's device (an op's output or gradient).
inline Tensor empty_like_device(const Shape& shape, const Tensor& x) {
    return Tensor::empty(shape, DType::kF32, x.device());
}

/// y = forward(x) elementwise, any shape, with autograd: dx = backward(x, dy). `forward` and
/// `backward` are the kernel-table entries (&KernelTable::relu_forward, ...).
template <auto Forward, auto Backward>
Tensor unary_elementwise(const Tensor& x, const char* op) {
    check_f32(x, op, "input");
    Tensor y = empty_like_device(x.shape(), x);
    (device_kernels(x.device()).*Forward)(x.f32(), y.f32(), x.numel());
    if (autograd::needs_grad({x})) {
        autograd::record(y, op, {x}, [x](const Tensor& dy) {
            Tensor dx = empty_like_device(x.shape(), x);
            (device_kernels(x.device()).*Backward)(x.f32(), dy.f32(), dx.f32(), x.numel());
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

/// True when a rounding-error probe is current (engine/noise/site_probe.h) and can rerun this
/// op's reduction: on the cpu (host buffers), outside a split batch.
inline bool probing(const Tensor& x) {
    return current_site_probe() != nullptr && x.device() == Device::kCpu &&
           current_batch_split() == nullptr;
}

/// When probing(x): the probe reruns the reduction `run(params', out)` for the `n` outputs of
/// `site`, params' being `params` with its accum set to each mode measured.
template <class Params, class Run>
void probe_rerun(const Tensor& x, ReduceSite site, int64_t n, const Params& params,
                 const Run& run) {
    if (!probing(x)) return;
    probe_site(site, n, [&](const AccumSpec& s, float* out) {
        Params r = params;
        r.accum = s;
        run(r, out);
    });
}

/// The gradient of bias b from dy viewed as (n, c, p) (site bias.grad; conv2d, linear and
/// bias_add share it). Undefined when the sums went to the accumulators of a split batch
/// (engine/runtime/batch_split.h). Defined in bias_add.cpp.
Tensor bias_grad(const Tensor& dy, const Tensor& b, int64_t n, int64_t c, int64_t p);

}  // namespace dt::ops_detail
