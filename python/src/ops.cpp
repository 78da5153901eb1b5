// SPDX-License-Identifier: MIT
// detrain._detrain's ops: engine ops on NumPy float32 arrays, each under one accumulation mode at
// every reduction site. Forward and backward run through the engine itself (the op, its autograd
// record or the backward function the record calls, and its kernels), so the bits are those of the
// same op inside a run under that mode. A call starts the sites' call counters from 0:
// permuted:<seed> then uses the keys of a run's first call of each site. Arrays are copied in and
// out (C order, float32).
#include "python/src/ops.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/batchnorm2d.h"
#include "engine/ops/conv2d.h"
#include "engine/ops/dispatch.h"
#include "engine/ops/linear.h"
#include "engine/ops/shape_ops.h"
#include "engine/ops/softmax_xent.h"

namespace nb = nanobind;

namespace dt::python {

namespace {

using Array = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using Labels = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using Out = nb::ndarray<nb::numpy, float>;

}  // namespace

AccumSpec accum_spec_of(const std::string& mode) {
    const std::string::size_type colon = mode.find(':');
    const std::string name = mode.substr(0, colon);
    const std::optional<AccumMode> m = accum_mode_from_name(name);
    DT_CHECK_VALUE(m.has_value() && (colon == std::string::npos) != (*m == AccumMode::kPermuted),
                   "mode '", mode, "' (expected atomic, tree, kahan, exact or permuted:<seed>)");
    if (*m != AccumMode::kPermuted) return kernels::common::accum_spec(*m);
    char* end = nullptr;
    const std::string seed = mode.substr(colon + 1);
    const unsigned long long key = std::strtoull(seed.c_str(), &end, 10);
    DT_CHECK_VALUE(!seed.empty() && *end == '\0', "mode '", mode,
                   "': the seed must be a non-negative integer, e.g. permuted:7");
    return kernels::common::accum_spec(AccumMode::kPermuted, key);
}

namespace {

/// A CPU tensor holding a copy of `a` (one allocation, one copy).
Tensor tensor_of(const Array& a, bool grad) {
    Shape shape;
    for (std::size_t d = 0; d < a.ndim(); ++d) shape.push_back(static_cast<int64_t>(a.shape(d)));
    Tensor t = Tensor::empty(shape);
    std::copy(a.data(), a.data() + a.size(), t.f32());
    if (grad) t.set_requires_grad(true);
    return t;
}

/// A NumPy array owning a copy of the CPU tensor t.
Out array_of(const Tensor& t) {
    auto* data = new float[static_cast<std::size_t>(t.numel())];
    std::copy(t.f32(), t.f32() + t.numel(), data);
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
    std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    return Out(data, shape.size(), shape.data(), owner);
}

/// The call's modes, counters from 0, restored when it returns.
struct ModeScope {
    explicit ModeScope(const std::string& mode) : config(accum_spec_of(mode)) {
        reset_reduce_counters();
    }
    ScopedReduceConfig config;
};

Out linear_forward(const Array& x, const Array& w, std::optional<Array> b) {
    const autograd::NoGradGuard no_grad;
    return array_of(
        linear(tensor_of(x, false), tensor_of(w, false), b ? tensor_of(*b, false) : Tensor()));
}

using Grads = std::tuple<Out, Out, std::optional<Out>>;

/// (dx, dw, db or None) of y = op(x, w, b) for dy under `mode`: the op recorded on the tape with
/// a zero bias when `bias`, then the backward from y with dy.
template <class Op>
Grads backward_of(const Array& x, const Array& w, const Array& dy, bool bias,
                  const std::string& mode, const Op& op) {
    const ModeScope scope(mode);
    const Tensor tx = tensor_of(x, true), tw = tensor_of(w, true);
    const Tensor tb = bias ? Tensor::zeros({tw.dim(0)}).set_requires_grad(true) : Tensor();
    autograd::backward(op(tx, tw, tb), tensor_of(dy, false));
    std::optional<Out> db;
    if (bias) db = array_of(tb.grad());
    return {array_of(tx.grad()), array_of(tw.grad()), db};
}

/// linear's backward without a tape: the function linear's autograd record calls.
Grads linear_grads(const Array& x, const Array& w, const Array& dy, bool bias,
                   const std::string& mode) {
    const ModeScope scope(mode);
    const Tensor tx = tensor_of(x, true), tw = tensor_of(w, true);
    DT_CHECK_SHAPE(tx.ndim() == 2 && tw.ndim() == 2 && tw.dim(1) == tx.dim(1),
                   "linear_backward: x must be (N, I) and w (O, I), got ", tx.str(), " and ",
                   tw.str());
    const Tensor tb = bias ? Tensor::zeros({tw.dim(0)}).set_requires_grad(true) : Tensor();
    const std::vector<Tensor> g = linear_backward(tx, tw, tb, tensor_of(dy, false));
    std::optional<Out> db;
    if (bias) db = array_of(g[2]);
    return {array_of(g[0]), array_of(g[1]), db};
}

Out conv2d_forward(const Array& x, const Array& w, std::optional<Array> b, int stride,
                   int padding) {
    const autograd::NoGradGuard no_grad;
    return array_of(conv2d(tensor_of(x, false), tensor_of(w, false),
                           b ? tensor_of(*b, false) : Tensor(), Conv2dOptions{stride, padding}));
}

Grads conv2d_backward(const Array& x, const Array& w, const Array& dy, int stride, int padding,
                      bool bias, const std::string& mode) {
    return backward_of(x, w, dy, bias, mode,
                       [&](const Tensor& a, const Tensor& b, const Tensor& c) {
                           return conv2d(a, b, c, Conv2dOptions{stride, padding});
                       });
}

std::tuple<float, Out> cross_entropy(const Array& logits, const Labels& labels,
                                     const std::string& mode) {
    const ModeScope scope(mode);
    const Tensor z = tensor_of(logits, true);
    const Tensor l =
        Tensor::from_vector_i64({static_cast<int64_t>(labels.size())},
                                std::vector<int64_t>(labels.data(), labels.data() + labels.size()));
    const Tensor loss = softmax_cross_entropy(z, l);
    const float value = loss.item();
    autograd::backward(loss);
    return {value, array_of(z.grad())};
}

/// Column sums of x (rows, cols) under `mode`: the bias.grad kernel with one leaf per row.
Out sum_rows(const Array& x, const std::string& mode) {
    DT_CHECK_SHAPE(x.ndim() == 2 && x.shape(0) > 0, "sum_rows: x must be (rows >= 1, cols), got ",
                   x.ndim(), " dimensions");
    const ModeScope scope(mode);
    const Tensor t = tensor_of(x, false);
    return array_of(ops_detail::bias_grad(t, Tensor::zeros({t.dim(1)}), t.dim(0), t.dim(1), 1));
}

/// x viewed as (N, C, HW): the kernel table's parameters of batchnorm2d for it.
kernels::BatchNorm2dParams batchnorm_params(const Tensor& x, float eps) {
    DT_CHECK_SHAPE(x.ndim() >= 2 && x.dim(1) > 0 && x.numel() / x.dim(1) > 1,
                   "batchnorm: x must be (N, C, ...) with more than one value per channel, got ",
                   x.str(), " (hint: a batch of 2 or more)");
    DT_CHECK_VALUE(std::isfinite(eps) && eps >= 0.0f, "eps must be a finite value >= 0, got ", eps);
    kernels::BatchNorm2dParams p;
    p.N = x.dim(0), p.C = x.dim(1), p.HW = x.numel() / (x.dim(0) * x.dim(1)), p.eps = eps;
    return p;
}

/// (mean, biased var, invstd) per channel: the engine's bn.stats call under `mode`.
std::tuple<Out, Out, Out> batchnorm_stats(const Array& x, float eps, const std::string& mode) {
    const ModeScope scope(mode);
    const Tensor t = tensor_of(x, false);
    kernels::BatchNorm2dParams p = batchnorm_params(t, eps);
    p.accum = accum_spec_for_call(ReduceSite::kBnStats);
    Tensor mean = Tensor::empty({p.C}), var = Tensor::empty({p.C}), invstd = Tensor::empty({p.C});
    device_kernels(t.device()).batchnorm2d_stats(t.f32(), mean.f32(), var.f32(), invstd.f32(), p);
    return {array_of(mean), array_of(var), array_of(invstd)};
}

/// batchnorm2d in training mode (batch statistics) on x viewed as (N, C, HW, 1).
Tensor batchnorm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
    const kernels::BatchNorm2dParams p = batchnorm_params(x, eps);
    Tensor running_mean = Tensor::zeros({p.C}), running_var = Tensor::full({p.C}, 1.0f);
    return batchnorm2d(reshape(x, {p.N, p.C, p.HW, 1}), gamma, beta, running_mean, running_var,
                       BatchNormOptions{.training = true, .momentum = 0.1f, .eps = eps});
}

Out batchnorm_forward(const Array& x, const Array& gamma, const Array& beta, float eps,
                      const std::string& mode) {
    const ModeScope scope(mode);
    const autograd::NoGradGuard no_grad;
    const Tensor t = tensor_of(x, false);
    return array_of(reshape(
        batchnorm_train(t, tensor_of(gamma, false), tensor_of(beta, false), eps), t.shape()));
}

Grads batchnorm_backward(const Array& x, const Array& gamma, const Array& dy, float eps,
                         const std::string& mode) {
    return backward_of(x, gamma, dy, true, mode,
                       [&](const Tensor& a, const Tensor& g, const Tensor& b) {
                           return reshape(batchnorm_train(a, g, b, eps), a.shape());
                       });
}

}  // namespace

void bind_ops(nb::module_& m) {
    m.def("linear", &linear_forward, nb::arg("x"), nb::arg("w"), nb::arg("b") = nb::none(),
          "y = x w^T + b (x (N, I), w (O, I)); one fma chain per output, no mode.");
    m.def("linear_backward", &linear_grads, nb::arg("x"), nb::arg("w"), nb::arg("dy"),
          nb::arg("bias"), nb::arg("mode"),
          "(dx, dw, db or None) of linear for dy (N, O) under one mode at linear.dgrad, "
          "linear.wgrad and bias.grad.");
    m.def("conv2d", &conv2d_forward, nb::arg("x"), nb::arg("w"), nb::arg("b") = nb::none(),
          nb::arg("stride") = 1, nb::arg("padding") = 0,
          "PyTorch's conv2d: x (N, Ci, H, W), w (Co, Ci, Kh, Kw) -> (N, Co, Ho, Wo).");
    m.def("conv2d_backward", &conv2d_backward, nb::arg("x"), nb::arg("w"), nb::arg("dy"),
          nb::arg("stride"), nb::arg("padding"), nb::arg("bias"), nb::arg("mode"),
          "(dx, dw, db or None) of conv2d under one mode at conv.dgrad, conv.wgrad and "
          "bias.grad.");
    m.def("softmax_cross_entropy", &cross_entropy, nb::arg("logits"), nb::arg("labels"),
          nb::arg("mode"), "(mean loss, dlogits) for int64 labels under one mode at the loss.");
    m.def("sum_rows", &sum_rows, nb::arg("x"), nb::arg("mode"),
          "Column sums of x (rows, cols) under one mode: the bias.grad kernel, a leaf per row.");
    m.def("batchnorm_stats", &batchnorm_stats, nb::arg("x"), nb::arg("eps"), nb::arg("mode"),
          "(mean, biased var, invstd) per channel of x (N, C, ...) at bn.stats under one mode.");
    m.def("batchnorm", &batchnorm_forward, nb::arg("x"), nb::arg("gamma"), nb::arg("beta"),
          nb::arg("eps"), nb::arg("mode"),
          "Training-mode batch norm of x (N, C, ...) with the batch statistics (bn.stats).");
    m.def("batchnorm_backward", &batchnorm_backward, nb::arg("x"), nb::arg("gamma"), nb::arg("dy"),
          nb::arg("eps"), nb::arg("mode"),
          "(dx, dgamma, dbeta) of training-mode batch norm at bn.stats and bn.backward.");
    bind_ops_bench(m);
}

}  // namespace dt::python
