// SPDX-License-Identifier: MIT
// GELU's CPU kernels (kernels/gelu.h) against the double reference, within a bound derived from
// the recipe, element by element (u the recipe's argument, E = e^(-2u), eps = 2^-24 the unit
// roundoff): u errs by at most 6 eps relatively (five roundings and the constants); e then by
// 2|u| * 6 eps + 4 eps (dt_expf within 4 eps), d = 1 + E by E / (1 + E) of that + eps, p = 2 / d
// by d's error + eps, y by p's error + eps. dx sums the errors of its three products and the two
// of its sum (q as the recipe computes it on either side of u = 0). In the tail, e overflows to
// +inf once -2u > 88.72 and p becomes 0 where it is below kTail = 2 e^-88.72: an absolute error of
// kTail in p (and 2 kTail in s), and half the least subnormal per rounding near 0. Special values,
// and the same bits at any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/ref/gelu_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

constexpr double kU = test::kEps32 / 2;  // unit roundoff
const double kTail = 2 * std::exp(-88.72283172607421875);
const double kSub = std::ldexp(1.0, -150);  // half the least subnormal

/// Relative errors of the recipe's p (= 1 + tanh u) and q (= 1 - tanh u) at x.
struct PqError {
    double p, q;
};
PqError pq_error(double x) {
    const double u = ref::gelu_u(x), E = std::exp(-2 * u);
    const double de = 2 * std::fabs(u) * 6 * kU + 4 * kU;
    const double dd = (std::isinf(E) ? 1.0 : E / (1 + E)) * de + kU;
    const double dp = dd + kU;
    // u >= 0: q = 2E / d; u < 0: q = 2 - p, where p <= 1 <= q.
    const double dq = u >= 0 ? de + dd + 2 * kU : dp + kU;
    return {dp, dq};
}

std::vector<double> forward_bounds(const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> b(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        b[i] = std::fabs(y[i]) * (pq_error(x[i]).p + kU) + std::fabs(0.5 * x[i]) * kTail + 2 * kSub;
    return b;
}

std::vector<double> backward_bounds(const std::vector<double>& x, const std::vector<double>& dy) {
    std::vector<double> b(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double u = ref::gelu_u(x[i]), ea = std::exp(-2 * std::fabs(u));
        const double p = 2 / (1 + std::exp(-2 * u)), s = 4 * ea / ((1 + ea) * (1 + ea));
        const double du = std::sqrt(2 / std::numbers::pi) * (1 + 3 * 0.044715 * x[i] * x[i]);
        const PqError e = pq_error(x[i]);
        const double first = 0.5 * p, second = std::fabs(0.5 * x[i] * s * du);
        const double g_err =
            first * (e.p + kU) + second * (e.p + e.q + 6 * kU + 4 * kU) + (first + second) * kU;
        const double tail = (0.5 + std::fabs(0.5 * x[i] * du) * 2) * kTail + 4 * kSub;
        b[i] = std::fabs(dy[i]) * (g_err + (first + second) * kU + tail) + kSub;
    }
    return b;
}

TEST(GeluKernel, WithinItsDerivedBoundOfTheReference) {
    for (int64_t n : {1, 7, 1000, 40001}) {
        for (float range : {1.0f, 6.0f, 30.0f}) {
            SCOPED_TRACE(std::to_string(n) + " values in +-" + std::to_string(range));
            const std::vector<float> x = test::uniform_floats(n, -range, range, test::test_seed());
            const std::vector<float> dy = test::uniform_floats(n, -1, 1, test::test_seed(), 1);
            std::vector<float> y(n), dx(n);
            cpu::gelu_forward(x.data(), y.data(), n);
            cpu::gelu_backward(x.data(), dy.data(), dx.data(), n);
            const std::vector<double> xd = test::to_double(x), dyd = test::to_double(dy);
            std::vector<double> yr(n), dxr(n);
            ref::gelu_forward(xd.data(), yr.data(), n);
            ref::gelu_backward(xd.data(), dyd.data(), dxr.data(), n);
            EXPECT_TRUE(test::within_bound(y.data(), yr.data(), forward_bounds(xd, yr).data(), n));
            EXPECT_TRUE(
                test::within_bound(dx.data(), dxr.data(), backward_bounds(xd, dyd).data(), n));
        }
    }
}

TEST(GeluKernel, SpecialValues) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {-0.0f, 0.0f, inf, -inf, NAN, 1e30f, -1e30f, 100.0f, -100.0f};
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y(x.size()), dx(x.size());
    const std::vector<float> dy(x.size(), 1.0f);
    cpu::gelu_forward(x.data(), y.data(), n);
    cpu::gelu_backward(x.data(), dy.data(), dx.data(), n);
    EXPECT_EQ(test::bits(y[0]), test::bits(-0.0f));  // x's sign kept
    EXPECT_EQ(test::bits(y[1]), test::bits(0.0f));
    EXPECT_EQ(y[2], inf);
    EXPECT_TRUE(std::isnan(y[3]));  // -inf * 0, as the contract says
    EXPECT_TRUE(std::isnan(y[4]) && std::isnan(dx[4]));
    EXPECT_EQ(y[5], 1e30f);  // p = 2 exactly: y = x
    EXPECT_EQ(test::bits(y[6]), test::bits(-0.0f));
    EXPECT_EQ(y[7], 100.0f);
    EXPECT_EQ(dx[7], 1.0f);
    EXPECT_EQ(dx[1], 0.5f);  // GELU'(0) = 1/2
    EXPECT_EQ(y[8], -0.0f);
    EXPECT_EQ(dx[8], 0.0f);
}

TEST(GeluKernel, ThreadCountDoesNotMatter) {
    const int64_t n = 300001;
    const std::vector<float> x = test::uniform_floats(n, -8.0f, 8.0f, test::test_seed());
    std::vector<float> y1(n), y4(n), d1(n), d4(n);
    omp_set_num_threads(1);
    cpu::gelu_forward(x.data(), y1.data(), n);
    cpu::gelu_backward(x.data(), x.data(), d1.data(), n);
    omp_set_num_threads(4);
    cpu::gelu_forward(x.data(), y4.data(), n);
    cpu::gelu_backward(x.data(), x.data(), d4.data(), n);
    omp_set_num_threads(omp_get_num_procs());
    EXPECT_TRUE(test::bitwise_equal(y1, y4));
    EXPECT_TRUE(test::bitwise_equal(d1, d4));
}

TEST(GeluKernel, EveryIsaPathGivesTheElementFunctionsBits) {
    // The vectorised loops (branch-free exp) against the recipe's scalar element functions, on
    // every 4099th float: all signs and magnitudes, infinities and NaNs among them.
    std::vector<float> x, dy;
    for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) {
        const auto u = static_cast<uint32_t>(b);
        x.push_back(common::bits_to_float(u));
        dy.push_back(common::bits_to_float(0x3f800000u ^ (u & 0x807fffffu)));  // +-[1, 2)
    }
    const auto n = static_cast<int64_t>(x.size());
    std::vector<float> y_want(x.size()), dx_want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        y_want[i] = gelu_forward_element(x[i]);
        dx_want[i] = gelu_backward_element(x[i], dy[i]);
    }
    const CpuIsa saved = cpu::cpu_isa();
    int paths = 0;
    for (CpuIsa isa : kCpuIsas) {
        if (!cpu::cpu_isa_set(isa)) continue;
        std::vector<float> y(x.size()), dx(x.size());
        cpu::gelu_forward(x.data(), y.data(), n);
        cpu::gelu_backward(x.data(), dy.data(), dx.data(), n);
        EXPECT_EQ(std::memcmp(y.data(), y_want.data(), 4 * y.size()), 0) << cpu::cpu_isa_name(isa);
        EXPECT_EQ(std::memcmp(dx.data(), dx_want.data(), 4 * dx.size()), 0)
            << cpu::cpu_isa_name(isa);
        for (const cpu::IsaDispatch& d : cpu::isa_dispatches()) {
            if (std::strcmp(d.name, "gelu_forward_range") == 0) {
                EXPECT_EQ(d.last, static_cast<int>(isa));
            }
        }
        ++paths;
    }
    cpu::cpu_isa_set(saved);
    EXPECT_GE(paths, 1);
}

}  // namespace
}  // namespace dt::kernels
