// SPDX-License-Identifier: MIT
// The tests of a layer with a weight and a bias (conv2d, linear; their kernels and their ops): its
// inputs, its three kernels (forward, dgrad, wgrad) on cpu:: and ref::, and the checks they make:
// the same bits as other outputs (the recipe's ORDER on every ISA path, the kernels an op calls),
// and a derived bound around the double reference (the bias gradient's too).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/bias_add.h"
#include "kernels/conv2d.h"
#include "kernels/cpu_isa.h"
#include "kernels/linear.h"
#include "kernels/ref/bias_add_ref.h"
#include "kernels/ref/conv2d_ref.h"
#include "kernels/ref/linear_ref.h"
#include "tests/support/compare.h"
#include "tests/support/isa_paths.h"
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

/// got and want hold the same bits, output by output.
inline void expect_same_bits(const LayerOutputs<float>& got, const LayerOutputs<float>& want) {
    EXPECT_TRUE(bitwise_equal(got.y, want.y)) << "forward";
    EXPECT_TRUE(bitwise_equal(got.dx, want.dx)) << "dgrad";
    EXPECT_TRUE(bitwise_equal(got.dw, want.dw)) << "wgrad";
}

/// A layer's kernels on cpu:: (float) and their double references (ref::).
template <class Params>
struct Layer {
    LayerKernels<float, Params> cpu;
    LayerKernels<double, Params> ref;
};

inline constexpr Layer<kernels::Conv2dParams> kConv2d{
    {kernels::cpu::conv2d_forward, kernels::cpu::conv2d_backward_data,
     kernels::cpu::conv2d_backward_weight},
    {kernels::ref::conv2d_forward, kernels::ref::conv2d_backward_data,
     kernels::ref::conv2d_backward_weight}};
inline constexpr Layer<kernels::LinearParams> kLinear{
    {kernels::cpu::linear_forward, kernels::cpu::linear_backward_data,
     kernels::cpu::linear_backward_weight},
    {kernels::ref::linear_forward, kernels::ref::linear_backward_data,
     kernels::ref::linear_backward_weight}};

/// run() (the cpu kernels' outputs) equals `want` bit for bit on every ISA path this CPU has;
/// the path in force is put back afterwards.
template <class Run>
void expect_every_isa_gives(const LayerOutputs<float>& want, Run run) {
    for_each_cpu_isa([&] { expect_same_bits(run(), want); });
}

/// got within terms * eps32 * magnitude of value, elementwise.
inline ::testing::AssertionResult within_terms(const std::vector<float>& got,
                                               const std::vector<double>& value,
                                               const std::vector<double>& magnitude, double terms) {
    return within_bound(got.data(), value.data(), eps_scaled(magnitude, terms).data(),
                        static_cast<int64_t>(got.size()));
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
    EXPECT_TRUE(within_terms(r.y, want.y, mag.y, c.y)) << "forward";
    EXPECT_TRUE(within_terms(r.dx, want.dx, mag.dx, c.dx)) << "dgrad";
    EXPECT_TRUE(within_terms(r.dw, want.dw, mag.dw, c.dw)) << "wgrad";
}

/// The bias gradient db of upstream gradient dy: bit for bit cpu::bias_add_backward's, and
/// within `terms` * eps32 * (the sums over |dy|) of the double reference.
inline void expect_bias_grad(const std::vector<float>& db, const std::vector<float>& dy,
                             const kernels::BiasAddParams& bp, double terms) {
    std::vector<float> want(db.size());
    kernels::cpu::bias_add_backward(dy.data(), want.data(), bp);
    EXPECT_TRUE(bitwise_equal(db, want)) << "bias.grad";
    const std::vector<double> dyd = to_double(dy), ady = absd(dy);
    std::vector<double> value(db.size()), mag(db.size());
    kernels::ref::bias_add_backward(dyd.data(), value.data(), bp);
    kernels::ref::bias_add_backward(ady.data(), mag.data(), bp);
    EXPECT_TRUE(within_terms(db, value, mag, terms)) << "bias.grad";
}

}  // namespace dt::test
