// SPDX-License-Identifier: MIT
// Pins the dropout recipe of kernels/dropout.h: the mask is the documented Philox layout (equal to
// the one-draw-per-element reference), kept values are x * float(1 / (1 - p)) within 2 * eps32 of
// the double reference, a sample's mask follows its id (not its batch row), the drop rate is p,
// and no thread count changes a bit.
#include "kernels/dropout.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/ref/dropout_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using Vec = std::vector<float>;
using Mask = std::vector<uint8_t>;

DropoutParams make(int64_t N, int64_t D, float p, uint64_t epoch = 3, uint32_t layer = 1) {
    DropoutParams q;
    q.N = N, q.D = D, q.p = p, q.seed = 0x5eed1234abcdULL, q.sub = dropout_sub(epoch, layer);
    return q;
}

std::vector<int64_t> ids_for(int64_t N, int64_t first = 1000) {
    std::vector<int64_t> ids;
    for (int64_t n = 0; n < N; ++n) ids.push_back(first + 7 * n);
    return ids;
}

struct Out {
    Vec y;
    Mask mask;
};

Out run(const DropoutParams& p, const Vec& x, const std::vector<int64_t>& ids) {
    Out o{Vec(p.N * p.D), Mask(p.N * p.D)};
    cpu::dropout_forward(x.data(), ids.data(), o.y.data(), o.mask.data(), p);
    return o;
}

TEST(Dropout, MaskFollowsTheCounterLayout) {
    const DropoutParams p = make(3, 10, 0.4f);
    const Vec x = test::uniform_floats(p.N * p.D, -1.0f, 1.0f, test::test_seed(), 1);
    const auto ids = ids_for(p.N);
    const Out o = run(p, x, ids);
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t j = 0; j < p.D; ++j) {
            using namespace common;
            const uint64_t index = (static_cast<uint64_t>(ids[n]) << 32) | (j / 4);
            const Philox4 r = philox_draw(p.seed, RngStream::kDropout, index, (3u << 16) | 1u);
            const bool dropped = uniform01(r.v[j % 4]) < 0.4f;
            ASSERT_EQ(o.mask[n * p.D + j], dropped ? 0 : 1) << "n=" << n << " j=" << j;
        }
}

TEST(Dropout, CpuMatchesReference) {
    for (const DropoutParams& p : {make(1, 1, 0.5f), make(5, 13, 0.25f), make(7, 64, 0.9f)}) {
        SCOPED_TRACE("N=" + std::to_string(p.N) + " D=" + std::to_string(p.D));
        const Vec x = test::uniform_floats(p.N * p.D, -2.0f, 2.0f, test::test_seed(), 2);
        const Vec dy = test::uniform_floats(p.N * p.D, -1.0f, 1.0f, test::test_seed(), 3);
        const auto ids = ids_for(p.N);
        const Out o = run(p, x, ids);
        std::vector<double> xd = test::to_double(x), dyd = test::to_double(dy);
        std::vector<double> yd(xd.size()), dxd(xd.size()), bound(xd.size());
        Mask mask_ref(xd.size());
        ref::dropout_forward(xd.data(), ids.data(), yd.data(), mask_ref.data(), p);
        EXPECT_EQ(o.mask, mask_ref);
        for (std::size_t i = 0; i < yd.size(); ++i) bound[i] = 2 * test::kEps32 * std::fabs(yd[i]);
        EXPECT_TRUE(test::within_bound(o.y.data(), yd.data(), bound.data(), p.N * p.D));
        Vec dx(x.size());
        cpu::dropout_backward(dy.data(), o.mask.data(), dx.data(), p);
        ref::dropout_backward(dyd.data(), o.mask.data(), dxd.data(), p);
        for (std::size_t i = 0; i < yd.size(); ++i) bound[i] = 2 * test::kEps32 * std::fabs(dxd[i]);
        EXPECT_TRUE(test::within_bound(dx.data(), dxd.data(), bound.data(), p.N * p.D));
        // ORDER: exactly x * scale and dy * scale with the float scale 1 / (1 - p).
        const float scale = 1.0f / (1.0f - p.p);
        for (std::size_t i = 0; i < x.size(); ++i) {
            ASSERT_EQ(test::bits(o.y[i]), test::bits(o.mask[i] ? x[i] * scale : 0.0f));
            ASSERT_EQ(test::bits(dx[i]), test::bits(o.mask[i] ? dy[i] * scale : 0.0f));
        }
    }
}

TEST(Dropout, MaskDependsOnSampleIdNotRow) {
    const DropoutParams p = make(4, 21, 0.5f);
    const Vec x(p.N * p.D, 1.0f);
    const std::vector<int64_t> ids = {11, 42, 7, 99}, shuffled = {99, 11, 42, 7};
    const Out a = run(p, x, ids), b = run(p, x, shuffled);
    const int64_t row_in_b[] = {1, 2, 3, 0};  // position of ids[n] in `shuffled`
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t j = 0; j < p.D; ++j)
            ASSERT_EQ(a.mask[n * p.D + j], b.mask[row_in_b[n] * p.D + j]);
    // Another epoch, layer or seed gives another mask.
    for (DropoutParams q : {make(4, 21, 0.5f, 4, 1), make(4, 21, 0.5f, 3, 2)}) {
        EXPECT_NE(run(q, x, ids).mask, a.mask);
    }
    DropoutParams q = p;
    q.seed = p.seed + 1;
    EXPECT_NE(run(q, x, ids).mask, a.mask);
}

TEST(Dropout, DropRateIsP) {
    for (float rate : {0.1f, 0.5f, 0.8f}) {
        const DropoutParams p = make(64, 1000, rate);
        const Out o = run(p, Vec(p.N * p.D, 1.0f), ids_for(p.N));
        double dropped = 0;
        for (uint8_t m : o.mask) dropped += m == 0;
        const double n = static_cast<double>(p.N * p.D);
        const double sigma = std::sqrt(rate * (1 - rate) / n);
        EXPECT_NEAR(dropped / n, rate, 5 * sigma) << "p=" << rate;
    }
}

TEST(Dropout, ThreadCountChangesNoBit) {
    const DropoutParams p = make(128, 515, 0.3f);
    const Vec x = test::uniform_floats(p.N * p.D, -1.0f, 1.0f, test::test_seed(), 4);
    const auto ids = ids_for(p.N, 123456);
    omp_set_num_threads(1);
    const Out first = run(p, x, ids);
    Vec dx1(x.size());
    cpu::dropout_backward(x.data(), first.mask.data(), dx1.data(), p);
    for (int t : {2, 3, 4, 7}) {
        omp_set_num_threads(t);
        const Out o = run(p, x, ids);
        Vec dx(x.size());
        cpu::dropout_backward(x.data(), o.mask.data(), dx.data(), p);
        EXPECT_TRUE(test::bitwise_equal(o.y, first.y)) << "threads=" << t;
        EXPECT_EQ(o.mask, first.mask) << "threads=" << t;
        EXPECT_TRUE(test::bitwise_equal(dx, dx1)) << "threads=" << t;
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
