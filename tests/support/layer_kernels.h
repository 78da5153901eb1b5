// SPDX-License-Identifier: MIT
// The kernel tests of a layer with a weight and a bias (conv2d, linear): its inputs, its three
// kernels (forward, dgrad, wgrad) on cpu:: and ref::, and the checks both tests make: the
// recipe's ORDER bit for bit on every ISA path, and a derived bound around the double reference.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu_isa.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::test {

/// A layer's inputs x, w, b and upstream gradient dy.
struct LayerData {
    std::vector<float> x, w, b, dy;
};

/// Inputs of the given sizes, uniform in [-1, 1) keyed by (seed, tags 1 to 4).
inline LayerData layer_data(int64_t nx, int64_t nw, int64_t nb, int64_t ny, uint64_t seed) {
    return LayerData{uniform_floats(nx, -1, 1, seed, 1), uniform_floats(nw, -1, 1, seed, 2),
                     uniform_floats(nb, -1, 1, seed, 3), uniform_floats(ny, -1, 1, seed, 4)};
}

/// What the three kernels give: y (forward), dx (dgrad), dw (wgrad).
template <class T>
struct LayerOutputs {
    std::vector<T> y, dx, dw;
};

/// A layer's three kernels over T with its Params (cpu:: in float; ref:: in double).
template <class T, class Params>
struct LayerKernels {
    void (*forward)(const T* x, const T* w, const T* b, T* y, const Params& p);
    void (*backward_data)(const T* dy, const T* w, T* dx, const Params& p);
    void (*backward_weight)(const T* x, const T* dy, T* dw, const Params& p);

    /// The outputs for inputs of a LayerData's layout (y has dy's size, dx x's, dw w's); dx and
    /// dw start at `fill`, which the kernels must overwrite.
    LayerOutputs<T> run(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                        const std::vector<T>& dy, const Params& p, T fill = 0) const {
        LayerOutputs<T> r{std::vector<T>(dy.size()), std::vector<T>(x.size(), fill),
                          std::vector<T>(w.size(), fill)};
        forward(x.data(), w.data(), b.data(), r.y.data(), p);
        backward_data(dy.data(), w.data(), r.dx.data(), p);
        backward_weight(x.data(), dy.data(), r.dw.data(), p);
        return r;
    }
    LayerOutputs<T> run(const LayerData& d, const Params& p, T fill = 0) const {
        return run(d.x, d.w, d.b, d.dy, p, fill);
    }
};

/// run() (the cpu kernels' outputs) equals `want` bit for bit on every ISA path this CPU has;
/// the path in force is put back afterwards.
template <class Run>
void expect_every_isa_gives(const LayerOutputs<float>& want, Run run) {
    const kernels::CpuIsa saved = kernels::cpu::cpu_isa();
    for (kernels::CpuIsa isa : kernels::kCpuIsas) {
        if (!kernels::cpu::cpu_isa_set(isa)) continue;
        SCOPED_TRACE(kernels::cpu::cpu_isa_name(isa));
        const LayerOutputs<float> r = run();
        EXPECT_TRUE(bitwise_equal(r.y, want.y)) << "forward";
        EXPECT_TRUE(bitwise_equal(r.dx, want.dx)) << "dgrad";
        EXPECT_TRUE(bitwise_equal(r.dw, want.dw)) << "wgrad";
    }
    kernels::cpu::cpu_isa_set(saved);
}

/// Terms per sum plus combining depth of each output's recipe: c of the bound c * eps32 * (the
/// same sum over |terms|).
struct LayerTerms {
    double y, dx, dw;
};

/// r lies within that bound of the double reference `ref` on inputs d: the bound's magnitudes
/// are ref's outputs on |x|, |w|, |b|, |dy|.
template <class Params>
void expect_within_reference_bounds(const LayerOutputs<float>& r, const LayerData& d,
                                    const LayerKernels<double, Params>& ref, const Params& p,
                                    LayerTerms c) {
    const LayerOutputs<double> want =
        ref.run(to_double(d.x), to_double(d.w), to_double(d.b), to_double(d.dy), p);
    const LayerOutputs<double> mag = ref.run(absd(d.x), absd(d.w), absd(d.b), absd(d.dy), p);
    const auto within = [](const std::vector<float>& got, const std::vector<double>& value,
                           const std::vector<double>& magnitude, double terms) {
        return within_bound(got.data(), value.data(), eps_scaled(magnitude, terms).data(),
                            static_cast<int64_t>(got.size()));
    };
    EXPECT_TRUE(within(r.y, want.y, mag.y, c.y)) << "forward";
    EXPECT_TRUE(within(r.dx, want.dx, mag.dx, c.dx)) << "dgrad";
    EXPECT_TRUE(within(r.dw, want.dw, mag.dw, c.dw)) << "wgrad";
}

}  // namespace dt::test
