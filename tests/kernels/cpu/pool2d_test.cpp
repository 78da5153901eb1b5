// SPDX-License-Identifier: MIT
// Pins the pooling recipes of kernels/pool2d.h. Max pool is pure selection, so the CPU kernel
// (including its 2x2 stride-2 fast path) equals the double reference exactly, ties and NaNs
// included. Sums (average pools, backward scatters) equal a plain float evaluation of the stated
// order bit for bit and are within (terms + 1) * eps32 * sum|terms| of the double reference.
// No thread count changes a bit.
#include "kernels/pool2d.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/ref/pool2d_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using test::kEps32;
using Vec = std::vector<float>;
using VecD = std::vector<double>;

Pool2dParams make(int64_t N, int64_t C, int64_t H, int64_t W, int k, int s, int pad) {
    Pool2dParams p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.kernel = k, p.stride = s, p.padding = pad;
    p.Ho = pool2d_out_size(H, k, s, pad);
    p.Wo = pool2d_out_size(W, k, s, pad);
    return p;
}

// Fast path (even and odd maps), the ResNet stem (3x3 s2 p1), overlapping and gapped windows.
const Pool2dParams kCases[] = {make(2, 3, 8, 8, 2, 2, 0),   make(2, 3, 7, 9, 2, 2, 0),
                               make(1, 2, 9, 7, 3, 2, 1),   make(2, 2, 6, 5, 3, 1, 1),
                               make(1, 1, 5, 5, 3, 3, 0),   make(3, 2, 10, 10, 2, 1, 0),
                               make(1, 3, 11, 13, 4, 3, 2), make(2, 1, 1, 1, 1, 1, 0)};

std::string describe(const Pool2dParams& p) {
    return "x=(" + std::to_string(p.N) + "," + std::to_string(p.C) + "," + std::to_string(p.H) +
           "," + std::to_string(p.W) + ") k=" + std::to_string(p.kernel) +
           " s=" + std::to_string(p.stride) + " pad=" + std::to_string(p.padding);
}

int64_t in_size(const Pool2dParams& p) { return p.N * p.C * p.H * p.W; }
int64_t out_size(const Pool2dParams& p) { return p.N * p.C * p.Ho * p.Wo; }

// Values on a coarse grid so that many windows hold ties.
Vec tied_values(int64_t n, uint32_t tag) {
    Vec v = test::uniform_floats(n, -3.0f, 3.0f, test::test_seed(), tag);
    for (auto& x : v) x = std::floor(x * 2.0f) * 0.5f;
    return v;
}

void expect_max_equals_ref(const Pool2dParams& p, const Vec& x) {
    Vec y(out_size(p));
    std::vector<int32_t> am(out_size(p)), am_ref(out_size(p));
    cpu::maxpool2d_forward(x.data(), y.data(), am.data(), p);
    VecD xd = test::to_double(x), yd(out_size(p));
    ref::maxpool2d_forward(xd.data(), yd.data(), am_ref.data(), p);
    Vec want(yd.begin(), yd.end());
    EXPECT_TRUE(test::bitwise_equal(y, want));
    EXPECT_EQ(am, am_ref);
}

TEST(Pool2d, MaxForwardEqualsReferenceWithTies) {
    for (const Pool2dParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        expect_max_equals_ref(p, tied_values(in_size(p), 1));
    }
}

TEST(Pool2d, MaxForwardNanAndInfinity) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (const Pool2dParams& p : {make(1, 2, 6, 6, 2, 2, 0), make(1, 2, 7, 7, 3, 2, 1)}) {
        SCOPED_TRACE(describe(p));
        Vec x = tied_values(in_size(p), 2);
        for (int64_t i = 0; i < in_size(p); i += 5) x[i] = nan;
        for (int64_t i = 2; i < in_size(p); i += 7) x[i] = -inf;
        for (int64_t i = 3; i < in_size(p); i += 11) x[i] = inf;
        expect_max_equals_ref(p, x);
        Vec all_neg_inf(in_size(p), -inf);
        expect_max_equals_ref(p, all_neg_inf);
    }
}

TEST(Pool2d, MaxForward2x2EqualsReferenceOnEveryIsa) {
    // Wide rows (Wo = 35: two full 16-window groups and a masked one), SmallCNN's rows (28, 14
    // and odd 7 columns) with ties, NaN, +-inf and zeros of both signs; every GEMM ISA path this
    // CPU has selects the same cells.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const CpuIsa saved = cpu::cpu_isa();
    for (const Pool2dParams& p : {make(2, 3, 9, 70, 2, 2, 0), make(2, 3, 28, 28, 2, 2, 0),
                                  make(2, 3, 14, 14, 2, 2, 0), make(2, 3, 7, 7, 2, 2, 0)}) {
        SCOPED_TRACE(describe(p));
        Vec x = tied_values(in_size(p), 3);
        for (int64_t i = 0; i < in_size(p); i += 13) x[i] = nan;
        for (int64_t i = 4; i < in_size(p); i += 17) x[i] = -inf;
        for (int64_t i = 6; i < in_size(p); i += 19) x[i] = inf;
        for (int64_t i = 8; i < in_size(p); i += 23) x[i] = -0.0f;
        for (int64_t i = 9; i < in_size(p); i += 29) x[i] = 0.0f;
        for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
            if (!cpu::cpu_isa_set(isa)) continue;
            SCOPED_TRACE(cpu::cpu_isa_name(isa));
            expect_max_equals_ref(p, x);
        }
    }
    cpu::cpu_isa_set(saved);
}

// ---- sums: the stated orders written plainly ----
Vec spec_avg_forward(const Pool2dParams& p, const Vec& x) {
    Vec y;
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                float s = 0.0f;
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        int64_t ih = oh * p.stride - p.padding + kh;
                        int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                            s = s + x[(pl * p.H + ih) * p.W + iw];
                    }
                y.push_back(s / static_cast<float>(p.kernel * p.kernel));
            }
    return y;
}

Vec spec_avg_backward(const Pool2dParams& p, const Vec& dy) {
    Vec dx(in_size(p), 0.0f);
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                const float g =
                    dy[(pl * p.Ho + oh) * p.Wo + ow] / static_cast<float>(p.kernel * p.kernel);
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        int64_t ih = oh * p.stride - p.padding + kh;
                        int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) {
                            float& d = dx[(pl * p.H + ih) * p.W + iw];
                            d = d + g;
                        }
                    }
            }
    return dx;
}

Vec spec_max_backward(const Pool2dParams& p, const std::vector<int32_t>& am, const Vec& dy) {
    Vec dx(in_size(p), 0.0f);
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t o = 0; o < p.Ho * p.Wo; ++o) {
            float& d = dx[pl * p.H * p.W + am[pl * p.Ho * p.Wo + o]];
            d = d + dy[pl * p.Ho * p.Wo + o];
        }
    return dx;
}

// Bound for sums of at most `terms` values: (terms + 1) * eps * sum|values| (sum of |ref| here).
VecD sum_bound(const VecD& magnitude, double terms) {
    VecD b(magnitude.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = (terms + 1) * kEps32 * magnitude[i] + 1e-30;
    return b;
}

TEST(Pool2d, AvgAndBackwardEqualTheRecipeAndBound) {
    for (const Pool2dParams& p : kCases) {
        SCOPED_TRACE(describe(p));
        const Vec x = test::uniform_floats(in_size(p), -2.0f, 2.0f, test::test_seed(), 3);
        const Vec dy = test::uniform_floats(out_size(p), -1.0f, 1.0f, test::test_seed(), 4);
        Vec y(out_size(p)), dxa(in_size(p)), dxm(in_size(p)), ym(out_size(p));
        std::vector<int32_t> am(out_size(p));
        cpu::avgpool2d_forward(x.data(), y.data(), p);
        cpu::avgpool2d_backward(dy.data(), dxa.data(), p);
        cpu::maxpool2d_forward(x.data(), ym.data(), am.data(), p);
        cpu::maxpool2d_backward(dy.data(), am.data(), dxm.data(), p);
        EXPECT_TRUE(test::bitwise_equal(y, spec_avg_forward(p, x)));
        EXPECT_TRUE(test::bitwise_equal(dxa, spec_avg_backward(p, dy)));
        EXPECT_TRUE(test::bitwise_equal(dxm, spec_max_backward(p, am, dy)));

        VecD xd = test::to_double(x), dyd = test::to_double(dy), yd(out_size(p));
        VecD dxad(in_size(p)), dxmd(in_size(p)), xabs(xd), dyabs(dyd);
        for (auto& v : xabs) v = std::fabs(v);
        for (auto& v : dyabs) v = std::fabs(v);
        VecD ymag(out_size(p)), dxamag(in_size(p)), dxmmag(in_size(p));
        ref::avgpool2d_forward(xd.data(), yd.data(), p);
        ref::avgpool2d_forward(xabs.data(), ymag.data(), p);
        ref::avgpool2d_backward(dyd.data(), dxad.data(), p);
        ref::avgpool2d_backward(dyabs.data(), dxamag.data(), p);
        ref::maxpool2d_backward(dyd.data(), am.data(), dxmd.data(), p);
        ref::maxpool2d_backward(dyabs.data(), am.data(), dxmmag.data(), p);
        const double terms = static_cast<double>(p.kernel) * p.kernel;
        EXPECT_TRUE(
            test::within_bound(y.data(), yd.data(), sum_bound(ymag, terms).data(), out_size(p)));
        EXPECT_TRUE(test::within_bound(dxa.data(), dxad.data(), sum_bound(dxamag, terms + 1).data(),
                                       in_size(p)));
        EXPECT_TRUE(test::within_bound(dxm.data(), dxmd.data(), sum_bound(dxmmag, terms).data(),
                                       in_size(p)));
    }
}

TEST(Pool2d, GlobalAvgEqualsTheRecipeAndBound) {
    for (int64_t hw : {1, 7, 49, 196}) {
        const int64_t planes = 37;
        const Vec x = test::uniform_floats(planes * hw, -2.0f, 2.0f, test::test_seed(), 5);
        const Vec dy = test::uniform_floats(planes, -1.0f, 1.0f, test::test_seed(), 6);
        Vec y(planes), dx(planes * hw), want_y, want_dx;
        cpu::global_avgpool_forward(x.data(), y.data(), planes, hw);
        cpu::global_avgpool_backward(dy.data(), dx.data(), planes, hw);
        for (int64_t pl = 0; pl < planes; ++pl) {
            float s = 0.0f;
            for (int64_t i = 0; i < hw; ++i) s = s + x[pl * hw + i];
            want_y.push_back(s / static_cast<float>(hw));
            for (int64_t i = 0; i < hw; ++i) want_dx.push_back(dy[pl] / static_cast<float>(hw));
        }
        EXPECT_TRUE(test::bitwise_equal(y, want_y));
        EXPECT_TRUE(test::bitwise_equal(dx, want_dx));
        VecD xd = test::to_double(x), yd(planes), xabs(xd), mag(planes);
        for (auto& v : xabs) v = std::fabs(v);
        ref::global_avgpool_forward(xd.data(), yd.data(), planes, hw);
        ref::global_avgpool_forward(xabs.data(), mag.data(), planes, hw);
        EXPECT_TRUE(test::within_bound(y.data(), yd.data(),
                                       sum_bound(mag, static_cast<double>(hw)).data(), planes));
    }
}

TEST(Pool2d, ThreadCountChangesNoBit) {
    for (const Pool2dParams& p : {make(16, 16, 28, 28, 2, 2, 0), make(8, 16, 28, 28, 3, 2, 1)}) {
        SCOPED_TRACE(describe(p));
        const Vec x = tied_values(in_size(p), 7);
        const Vec dy = test::uniform_floats(out_size(p), -1.0f, 1.0f, test::test_seed(), 8);
        auto run = [&] {
            Vec y(out_size(p)), ya(out_size(p)), dxm(in_size(p)), dxa(in_size(p));
            std::vector<int32_t> am(out_size(p));
            cpu::maxpool2d_forward(x.data(), y.data(), am.data(), p);
            cpu::maxpool2d_backward(dy.data(), am.data(), dxm.data(), p);
            cpu::avgpool2d_forward(x.data(), ya.data(), p);
            cpu::avgpool2d_backward(dy.data(), dxa.data(), p);
            Vec all = y;
            all.insert(all.end(), ya.begin(), ya.end());
            all.insert(all.end(), dxm.begin(), dxm.end());
            all.insert(all.end(), dxa.begin(), dxa.end());
            for (int32_t a : am) all.push_back(static_cast<float>(a));
            return all;
        };
        omp_set_num_threads(1);
        const Vec first = run();
        for (int t : {2, 3, 4, 7}) {
            omp_set_num_threads(t);
            EXPECT_TRUE(test::bitwise_equal(run(), first)) << "threads=" << t;
        }
        omp_set_num_threads(omp_get_num_procs());
    }
}

}  // namespace
}  // namespace dt::kernels
