// SPDX-License-Identifier: MIT
// Pins the linear recipes of kernels/linear.h: forward, linear.dgrad and linear.wgrad equal a
// naive float evaluation of the stated ORDER bit for bit on every ISA path; they lie within
// derived bounds of the double reference; no thread count changes a bit.
#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/gemm.h"
#include "kernels/ref/linear_ref.h"
#include "tests/support/compare.h"
#include "tests/support/layer_kernels.h"
#include "tests/support/rng.h"
#include "tests/support/threads.h"

namespace dt::kernels {
namespace {

// (n, in, out): 1, primes, around GEMM tiles (8, 16, 32) and the wgrad chunk (512).
const LinearParams kCases[] = {{.n = 1, .in = 1, .out = 1},     {.n = 3, .in = 5, .out = 2},
                               {.n = 7, .in = 31, .out = 10},   {.n = 8, .in = 32, .out = 16},
                               {.n = 17, .in = 33, .out = 9},   {.n = 16, .in = 511, .out = 3},
                               {.n = 33, .in = 513, .out = 65}, {.n = 2, .in = 1025, .out = 7}};

test::LayerData make_data(const LinearParams& p, uint64_t seed) {
    return test::layer_data(p.n * p.in, p.out * p.in, p.out, p.n * p.out, seed);
}

/// The ORDER of kernels/linear.h as plain float loops.
test::LayerOutputs<float> spec(const test::LayerData& d, const LinearParams& p) {
    test::LayerOutputs<float> r{std::vector<float>(p.n * p.out), std::vector<float>(p.n * p.in),
                                std::vector<float>(p.out * p.in)};
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.out; ++o) {
            float acc = 0.0f;
            for (int64_t i = 0; i < p.in; ++i)
                acc = std::fma(d.x[s * p.in + i], d.w[o * p.in + i], acc);
            r.y[s * p.out + o] = acc + d.b[o];
        }
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t i = 0; i < p.in; ++i) {
            float acc = 0.0f;
            for (int64_t o = 0; o < p.out; ++o)
                acc = std::fma(d.dy[s * p.out + o], d.w[o * p.in + i], acc);
            r.dx[s * p.in + i] = acc;
        }
    std::vector<float> leaves(p.n);
    for (int64_t o = 0; o < p.out; ++o)
        for (int64_t i = 0; i < p.in; ++i) {
            for (int64_t s = 0; s < p.n; ++s) leaves[s] = d.dy[s * p.out + o] * d.x[s * p.in + i];
            r.dw[o * p.in + i] = common::reduce_tree_combine(leaves.data(), p.n);
        }
    return r;
}

std::string describe(const LinearParams& p) {
    return "n=" + std::to_string(p.n) + " in=" + std::to_string(p.in) +
           " out=" + std::to_string(p.out);
}

TEST(Linear, EveryIsaMatchesTheOrderBitwise) {
    for (const LinearParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const test::LayerData d = make_data(p, test::test_seed());
        test::expect_every_isa_gives(spec(d, p), [&] { return test::kLinear.cpu.run(d, p, 9.0f); });
    }
}

TEST(Linear, WithinDerivedBoundOfDoubleReference) {
    for (const LinearParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const test::LayerData d = make_data(p, test::test_seed() + 1);
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        test::expect_within_reference_bounds(test::kLinear.cpu.run(d, p, 9.0f), d,
                                             test::kLinear.ref, p,
                                             {.y = static_cast<double>(p.in + 2),
                                              .dx = static_cast<double>(p.out + 1),
                                              .dw = depth + 2});
    }
}

TEST(Linear, ThreadCountChangesNoBit) {
    for (const LinearParams& p : {LinearParams{.n = 128, .in = 1568, .out = 128},
                                  LinearParams{.n = 37, .in = 700, .out = 10}}) {
        SCOPED_TRACE(describe(p));
        const test::LayerData d = make_data(p, test::test_seed() + 2);
        test::expect_layer_same_bits_at_thread_counts(
            [&] { return test::kLinear.cpu.run(d, p, 9.0f); });
    }
}

}  // namespace
}  // namespace dt::kernels
