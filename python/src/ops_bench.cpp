// SPDX-License-Identifier: MIT
// detrain._detrain.ops._kernel_seconds: the time of an op's kernels alone, called through the
// kernel table on buffers allocated once, for bench/python/ops_overhead.py. The difference to a
// detrain.ops call of the same shapes is what the binding adds: argument checks, copies, tensors
// and the tape.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/dispatch.h"
#include "python/src/ops.h"

namespace nb = nanobind;

namespace dt::python {

namespace {

using Array = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

/// Seconds per call of `body`: the mean over `reps` calls after one warm-up call.
template <class Body>
double seconds_per_call(int reps, const Body& body) {
    body();
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) body();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return took.count() / reps;
}

std::vector<float> buffer(int64_t n, float value = 0.0f) {
    return std::vector<float>(static_cast<std::size_t>(n), value);
}

/// linear: x (N, I), w (O, I), a zero bias. linear_backward: dgrad, wgrad and bias.grad for
/// dy = 1. sum: column sums of x (rows, cols). batchnorm_stats: x (N, C, ...). The last two
/// ignore w.
double kernel_seconds(const std::string& op, const Array& x, const Array& w,
                      const std::string& mode, int reps) {
    DT_CHECK_VALUE(reps >= 1, "reps must be >= 1, got ", reps);
    const kernels::common::AccumSpec spec = accum_spec_of(mode);
    const kernels::KernelTable& k = device_kernels(Device::kCpu);
    const float* xp = x.data();
    const auto dim = [&](std::size_t d) { return static_cast<int64_t>(x.shape(d)); };
    if (op == "linear" || op == "linear_backward") {
        DT_CHECK_SHAPE(x.ndim() == 2 && w.ndim() == 2 && x.shape(1) == w.shape(1), op,
                       ": x must be (N, I) and w (O, I)");
        const kernels::LinearParams p{
            .n = dim(0), .in = dim(1), .out = static_cast<int64_t>(w.shape(0)), .accum = spec};
        std::vector<float> b = buffer(p.out), y = buffer(p.n * p.out), dy = buffer(p.n * p.out, 1);
        std::vector<float> dx = buffer(p.n * p.in), dw = buffer(p.out * p.in), db = buffer(p.out);
        if (op == "linear")
            return seconds_per_call(reps,
                                    [&] { k.linear_forward(xp, w.data(), b.data(), y.data(), p); });
        const kernels::BiasAddParams q{.n = p.n, .c = p.out, .p = 1, .accum = spec};
        return seconds_per_call(reps, [&] {
            k.linear_backward_data(dy.data(), w.data(), dx.data(), p);
            k.linear_backward_weight(xp, dy.data(), dw.data(), p);
            k.bias_add_backward(dy.data(), db.data(), q);
        });
    }
    if (op == "sum") {
        DT_CHECK_SHAPE(x.ndim() == 2, "sum: x must be (rows, cols)");
        const kernels::BiasAddParams q{.n = dim(0), .c = dim(1), .p = 1, .accum = spec};
        std::vector<float> out = buffer(q.c);
        return seconds_per_call(reps, [&] { k.bias_add_backward(xp, out.data(), q); });
    }
    DT_CHECK_VALUE(op == "batchnorm_stats", "op '", op,
                   "' (expected linear, linear_backward, sum or batchnorm_stats)");
    DT_CHECK_SHAPE(x.ndim() >= 2, "batchnorm_stats: x must be (N, C, ...)");
    kernels::BatchNorm2dParams p;
    p.N = dim(0), p.C = dim(1), p.HW = static_cast<int64_t>(x.size()) / (p.N * p.C);
    p.accum = spec;
    std::vector<float> mean = buffer(p.C), var = buffer(p.C), invstd = buffer(p.C);
    return seconds_per_call(
        reps, [&] { k.batchnorm2d_stats(xp, mean.data(), var.data(), invstd.data(), p); });
}

}  // namespace

void bind_ops_bench(nb::module_& m) {
    m.def("_kernel_seconds", &kernel_seconds, nb::arg("op"), nb::arg("x"), nb::arg("w"),
          nb::arg("mode"), nb::arg("reps"),
          "Seconds per call of an op's kernels alone (bench/python/ops_overhead.py).");
}

}  // namespace dt::python
