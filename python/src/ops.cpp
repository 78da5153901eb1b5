// SPDX-License-Identifier: MIT
// detrain._detrain's ops: engine ops on NumPy float32 arrays, each under one accumulation mode
// at every reduction site. Forward and backward run through the engine itself (the op, its
// autograd record and its kernels), so the bits are those of the same op inside a run under
// that mode. A call starts the sites' call counters from 0: permuted:<seed> then uses the keys
// of a run's first call of each site. Arrays are copied in and out (C order, float32).
#include "python/src/ops.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/conv2d.h"
#include "engine/ops/linear.h"
#include "engine/ops/softmax_xent.h"

namespace nb = nanobind;

namespace dt::python {

namespace {

using Array = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using Labels = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using Out = nb::ndarray<nb::numpy, float>;

/// "atomic|tree|kahan|exact|permuted:<seed>" -> the spec every site takes for the call.
AccumSpec spec_of(const std::string& mode) {
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

Tensor tensor_of(const Array& a, bool grad) {
    Shape shape;
    for (std::size_t d = 0; d < a.ndim(); ++d) shape.push_back(static_cast<int64_t>(a.shape(d)));
    Tensor t = Tensor::from_vector(shape, std::vector<float>(a.data(), a.data() + a.size()));
    if (grad) t.set_requires_grad(true);
    return t;
}

Out array_of(const Tensor& t) {
    const std::vector<float> v = t.to_vector();
    auto* data = new float[v.size()];
    std::copy(v.begin(), v.end(), data);
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
    std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    return Out(data, shape.size(), shape.data(), owner);
}

/// The call's modes, counters from 0, restored when it returns.
struct ModeScope {
    explicit ModeScope(const std::string& mode) : config(spec_of(mode)) { reset_reduce_counters(); }
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

Grads linear_backward(const Array& x, const Array& w, const Array& dy, bool bias,
                      const std::string& mode) {
    return backward_of(x, w, dy, bias, mode, [](const Tensor& a, const Tensor& b, const Tensor& c) {
        return linear(a, b, c);
    });
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

}  // namespace

void bind_ops(nb::module_& m) {
    m.def("linear", &linear_forward, nb::arg("x"), nb::arg("w"), nb::arg("b") = nb::none(),
          "y = x w^T + b (x (N, I), w (O, I)); one fma chain per output, no mode.");
    m.def("linear_backward", &linear_backward, nb::arg("x"), nb::arg("w"), nb::arg("dy"),
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
}

}  // namespace dt::python
