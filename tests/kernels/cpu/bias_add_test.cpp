// SPDX-License-Identifier: MIT
// Pins the bias_add recipes of kernels/bias_add.h: forward is one add per element; bias.grad
// equals per-sample sequential leaves combined by the tree, bit for bit; it is within
// (P + tree depth + 2) * eps32 * sum|dy| of the double reference; no thread count changes a bit.
#include "kernels/bias_add.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/ref/bias_add_ref.h"
#include "tests/support/compare.h"
#include "tests/support/isa_paths.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

// (n, c, p): tails of the 8-sample leaf groups, P = 1 (linear), SmallCNN-like maps.
const BiasAddParams kCases[] = {{.n = 1, .c = 1, .p = 1},     {.n = 3, .c = 2, .p = 5},
                                {.n = 8, .c = 3, .p = 7},     {.n = 9, .c = 4, .p = 1},
                                {.n = 17, .c = 5, .p = 49},   {.n = 128, .c = 10, .p = 1},
                                {.n = 37, .c = 16, .p = 196}, {.n = 32, .c = 3, .p = 16}};

std::string describe(const BiasAddParams& p) {
    return "n=" + std::to_string(p.n) + " c=" + std::to_string(p.c) + " p=" + std::to_string(p.p);
}

std::vector<float> spec_grad(const std::vector<float>& dy, const BiasAddParams& p) {
    std::vector<float> db(p.c), leaves(p.n);
    for (int64_t c = 0; c < p.c; ++c) {
        for (int64_t s = 0; s < p.n; ++s) {
            float acc = 0.0f;
            for (int64_t q = 0; q < p.p; ++q) acc = acc + dy[(s * p.c + c) * p.p + q];
            leaves[s] = acc;
        }
        db[c] = common::reduce_tree_combine(leaves.data(), p.n);
    }
    return db;
}

TEST(BiasAdd, ForwardIsOneAddPerElement) {
    for (const BiasAddParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const auto x = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 1);
        const auto b = test::uniform_floats(p.c, -1, 1, test::test_seed(), 2);
        std::vector<float> y(x.size()), want(x.size());
        cpu::bias_add_forward(x.data(), b.data(), y.data(), p);
        for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] + b[(i / p.p) % p.c];
        ASSERT_TRUE(test::bitwise_equal(y, want));
        std::vector<double> xd = test::to_double(x), bd = test::to_double(b), yd(x.size());
        ref::bias_add_forward(xd.data(), bd.data(), yd.data(), p);
        for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], static_cast<float>(yd[i]));
    }
}

TEST(BiasAdd, GradMatchesTheOrderBitwiseOnEveryIsa) {
    test::for_each_cpu_isa([] {
        for (const BiasAddParams& p : kCases) {
            SCOPED_TRACE(describe(p));
            const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 3);
            std::vector<float> db(p.c, 9.0f);
            cpu::bias_add_backward(dy.data(), db.data(), p);
            EXPECT_TRUE(test::bitwise_equal(db, spec_grad(dy, p)));
        }
    });
}

TEST(BiasAdd, GradWithinTheBoundOfTheDoubleReference) {
    for (const BiasAddParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 3);
        std::vector<float> db(p.c, 9.0f);
        cpu::bias_add_backward(dy.data(), db.data(), p);
        std::vector<double> dyd = test::to_double(dy), want(p.c), mag(p.c), bound(p.c);
        ref::bias_add_backward(dyd.data(), want.data(), p);
        for (auto& v : dyd) v = std::fabs(v);
        ref::bias_add_backward(dyd.data(), mag.data(), p);
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        for (int64_t c = 0; c < p.c; ++c) bound[c] = (p.p + depth + 2) * test::kEps32 * mag[c];
        ASSERT_TRUE(test::within_bound(db.data(), want.data(), bound.data(), p.c));
    }
}

TEST(BiasAdd, ThreadCountChangesNoBit) {
    const BiasAddParams p{.n = 129, .c = 33, .p = 196};
    const auto dy = test::uniform_floats(p.n * p.c * p.p, -1, 1, test::test_seed(), 4);
    std::vector<float> first(p.c), db(p.c);
    omp_set_num_threads(1);
    cpu::bias_add_backward(dy.data(), first.data(), p);
    for (int threads : {2, 3, 4, 7}) {
        omp_set_num_threads(threads);
        cpu::bias_add_backward(dy.data(), db.data(), p);
        ASSERT_TRUE(test::bitwise_equal(db, first)) << "threads=" << threads;
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
