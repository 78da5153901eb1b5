// SPDX-License-Identifier: MIT
// Double-precision gradient check for reference kernels: compares an analytic vector-Jacobian
// product dx = J^T dy with central differences of s(x) = <f(x), dy>:
//   fd_i = (s(x + h e_i) - s(x - h e_i)) / (2h),  pass iff |fd_i - dx_i| <= atol + rtol * |fd_i|.
// Inputs should avoid kinks (ReLU at 0, max-pool ties) by more than h.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <vector>

namespace dt::test {

using VecFn = std::function<std::vector<double>(const std::vector<double>&)>;

inline ::testing::AssertionResult gradcheck(const VecFn& f, std::vector<double> x,
                                            const std::vector<double>& dy,
                                            const std::vector<double>& dx, double h = 1e-6,
                                            double atol = 1e-7, double rtol = 1e-6) {
    if (dx.size() != x.size()) {
        return ::testing::AssertionFailure()
               << "analytic gradient has " << dx.size() << " entries for " << x.size() << " inputs";
    }
    auto dot = [&](const std::vector<double>& y) {
        double s = 0;
        for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * dy[i];
        return s;
    };
    std::ostringstream os;
    int bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double xi = x[i];
        x[i] = xi + h;
        const double sp = dot(f(x));
        x[i] = xi - h;
        const double sm = dot(f(x));
        x[i] = xi;
        const double fd = (sp - sm) / (2 * h);
        if (std::fabs(fd - dx[i]) <= atol + rtol * std::fabs(fd)) continue;
        if (bad++ < 8)
            os << "\n  d/dx[" << i << "]: finite difference " << fd << ", analytic " << dx[i];
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << bad << " of " << x.size() << " partials differ:" << os.str();
}

/// gradcheck of each input of a reference layer forward(x, w, b, y, p) (the other two held):
/// dx, dw and db against the central differences of <y, dy> (y has the size of dy).
template <class Params>
void expect_layer_gradients(void (*forward)(const double*, const double*, const double*, double*,
                                            const Params&),
                            const Params& p, const std::vector<double>& x,
                            const std::vector<double>& w, const std::vector<double>& b,
                            const std::vector<double>& dy, const std::vector<double>& dx,
                            const std::vector<double>& dw, const std::vector<double>& db) {
    const auto y = [&](const std::vector<double>& xi, const std::vector<double>& wi,
                       const std::vector<double>& bi) {
        std::vector<double> out(dy.size());
        forward(xi.data(), wi.data(), bi.data(), out.data(), p);
        return out;
    };
    EXPECT_TRUE(gradcheck([&](const auto& v) { return y(v, w, b); }, x, dy, dx)) << "dx";
    EXPECT_TRUE(gradcheck([&](const auto& v) { return y(x, v, b); }, w, dy, dw)) << "dw";
    EXPECT_TRUE(gradcheck([&](const auto& v) { return y(x, w, v); }, b, dy, db)) << "db";
}

/// gradcheck of an elementwise reference pair forward(x, y, n), backward(x, dy, dx, n).
inline ::testing::AssertionResult unary_gradcheck(void (*forward)(const double*, double*, int64_t),
                                                  void (*backward)(const double*, const double*,
                                                                   double*, int64_t),
                                                  const std::vector<double>& x,
                                                  const std::vector<double>& dy) {
    const auto n = static_cast<int64_t>(x.size());
    std::vector<double> dx(x.size());
    backward(x.data(), dy.data(), dx.data(), n);
    const auto f = [&](const std::vector<double>& in) {
        std::vector<double> y(in.size());
        forward(in.data(), y.data(), n);
        return y;
    };
    return gradcheck(f, x, dy, dx);
}

}  // namespace dt::test
