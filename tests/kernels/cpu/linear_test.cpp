// SPDX-License-Identifier: MIT
// Pins the linear recipes of kernels/linear.h: forward, linear.dgrad and linear.wgrad equal a
// naive float evaluation of the stated ORDER bit for bit on every ISA path; they lie within
// derived bounds of the double reference; no thread count changes a bit.
#include "kernels/linear.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/gemm.h"
#include "kernels/ref/linear_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using test::absd, test::eps_scaled;

// (n, in, out): 1, primes, around GEMM tiles (8, 16, 32) and the wgrad chunk (512).
const LinearParams kCases[] = {{.n = 1, .in = 1, .out = 1},    {.n = 3, .in = 5, .out = 2},
                               {.n = 7, .in = 31, .out = 10},  {.n = 8, .in = 32, .out = 16},
                               {.n = 17, .in = 33, .out = 9},  {.n = 16, .in = 511, .out = 3},
                               {.n = 33, .in = 513, .out = 65}, {.n = 2, .in = 1025, .out = 7}};

struct Data {
    std::vector<float> x, w, b, dy;
};

Data make_data(const LinearParams& p, uint64_t seed) {
    return Data{test::uniform_floats(p.n * p.in, -1, 1, seed, 1),
                test::uniform_floats(p.out * p.in, -1, 1, seed, 2),
                test::uniform_floats(p.out, -1, 1, seed, 3),
                test::uniform_floats(p.n * p.out, -1, 1, seed, 4)};
}

struct Results {
    std::vector<float> y, dx, dw;
};

Results run_cpu(const Data& d, const LinearParams& p) {
    Results r{std::vector<float>(p.n * p.out), std::vector<float>(p.n * p.in, 9.0f),
              std::vector<float>(p.out * p.in, 9.0f)};
    cpu::linear_forward(d.x.data(), d.w.data(), d.b.data(), r.y.data(), p);
    cpu::linear_backward_data(d.dy.data(), d.w.data(), r.dx.data(), p);
    cpu::linear_backward_weight(d.x.data(), d.dy.data(), r.dw.data(), p);
    return r;
}

/// The ORDER of kernels/linear.h as plain float loops.
Results spec(const Data& d, const LinearParams& p) {
    Results r{std::vector<float>(p.n * p.out), std::vector<float>(p.n * p.in),
              std::vector<float>(p.out * p.in)};
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.out; ++o) {
            float acc = 0.0f;
            for (int64_t i = 0; i < p.in; ++i) acc = std::fma(d.x[s * p.in + i], d.w[o * p.in + i], acc);
            r.y[s * p.out + o] = acc + d.b[o];
        }
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t i = 0; i < p.in; ++i) {
            float acc = 0.0f;
            for (int64_t o = 0; o < p.out; ++o) acc = std::fma(d.dy[s * p.out + o], d.w[o * p.in + i], acc);
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
    const CpuIsa saved = cpu::cpu_isa();
    for (const LinearParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed());
        const Results want = spec(d, p);
        for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
            if (!cpu::cpu_isa_set(isa)) continue;
            SCOPED_TRACE(cpu::cpu_isa_name(isa));
            const Results r = run_cpu(d, p);
            ASSERT_TRUE(test::bitwise_equal(r.y, want.y)) << "forward";
            ASSERT_TRUE(test::bitwise_equal(r.dx, want.dx)) << "dgrad";
            ASSERT_TRUE(test::bitwise_equal(r.dw, want.dw)) << "wgrad";
        }
    }
    cpu::cpu_isa_set(saved);
}

TEST(Linear, WithinDerivedBoundOfDoubleReference) {
    for (const LinearParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 1);
        const Results r = run_cpu(d, p);
        const auto x = test::to_double(d.x), w = test::to_double(d.w), b = test::to_double(d.b),
                   dy = test::to_double(d.dy);
        const auto ax = absd(d.x), aw = absd(d.w), ab = absd(d.b), ady = absd(d.dy);
        std::vector<double> y(p.n * p.out), ym(y.size()), dx(p.n * p.in), dxm(dx.size()),
            dw(p.out * p.in), dwm(dw.size());
        ref::linear_forward(x.data(), w.data(), b.data(), y.data(), p);
        ref::linear_forward(ax.data(), aw.data(), ab.data(), ym.data(), p);
        ref::linear_backward_data(dy.data(), w.data(), dx.data(), p);
        ref::linear_backward_data(ady.data(), aw.data(), dxm.data(), p);
        ref::linear_backward_weight(x.data(), dy.data(), dw.data(), p);
        ref::linear_backward_weight(ax.data(), ady.data(), dwm.data(), p);
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        EXPECT_TRUE(
            test::within_bound(r.y.data(), y.data(), eps_scaled(ym, p.in + 2).data(), p.n * p.out));
        EXPECT_TRUE(test::within_bound(r.dx.data(), dx.data(), eps_scaled(dxm, p.out + 1).data(),
                                       p.n * p.in));
        EXPECT_TRUE(test::within_bound(r.dw.data(), dw.data(), eps_scaled(dwm, depth + 2).data(),
                                       p.out * p.in));
    }
}

TEST(Linear, ThreadCountChangesNoBit) {
    for (const LinearParams& p : {LinearParams{.n = 128, .in = 1568, .out = 128},
                                  LinearParams{.n = 37, .in = 700, .out = 10}}) {
        SCOPED_TRACE(describe(p));
        const Data d = make_data(p, test::test_seed() + 2);
        omp_set_num_threads(1);
        const Results first = run_cpu(d, p);
        for (int threads : {2, 3, 4, 7}) {
            omp_set_num_threads(threads);
            const Results r = run_cpu(d, p);
            ASSERT_TRUE(test::bitwise_equal(r.y, first.y)) << "forward, threads=" << threads;
            ASSERT_TRUE(test::bitwise_equal(r.dx, first.dx)) << "dgrad, threads=" << threads;
            ASSERT_TRUE(test::bitwise_equal(r.dw, first.dw)) << "wgrad, threads=" << threads;
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
