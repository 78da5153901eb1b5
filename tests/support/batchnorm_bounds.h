// SPDX-License-Identifier: MIT
// Error bounds of the batch-norm kernels against the double reference (kernels/batchnorm2d.h),
// shared by batchnorm2d_test.cpp and modes/batchnorm2d_entries.cpp: a per-channel total of L
// terms errs by at most L * eps32 * the sum of |terms|; that error propagates to first order into
// the mean, variance, invstd and xhat, and from there into dbeta and dgamma, plus a few roundings
// per formula. L depends on how the mode combines the N per-sample leaves of HW terms each.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "tests/support/compare.h"

namespace dt::test {

struct BatchNormBounds {
    std::vector<double> mean, var, invstd;  // (C)
    std::vector<double> xhat;               // (N * C * HW)
    std::vector<double> dbeta, dgamma;      // (C)
};

/// The bounds for terms per total L, given the inputs x, dy and the reference mean, var and
/// invstd (all double, x and dy (N, C, HW)).
inline BatchNormBounds batchnorm_bounds(const kernels::BatchNorm2dParams& p, double L,
                                        const std::vector<double>& x,
                                        const std::vector<double>& dy,
                                        const std::vector<double>& mean,
                                        const std::vector<double>& var,
                                        const std::vector<double>& is) {
    const int64_t n = p.N * p.C * p.HW;
    const double count = static_cast<double>(p.N * p.HW);
    const auto C = static_cast<std::size_t>(p.C);
    BatchNormBounds b{std::vector<double>(C), std::vector<double>(C), std::vector<double>(C),
                      std::vector<double>(static_cast<std::size_t>(n)), std::vector<double>(C),
                      std::vector<double>(C)};
    std::vector<double> abs_x(C), abs_dy(C), abs_dyxh(C), prop(C);
    for (int64_t k = 0; k < n; ++k) {
        const int64_t c = (k / p.HW) % p.C;
        abs_x[c] += std::fabs(x[k]);
        abs_dy[c] += std::fabs(dy[k]);
        abs_dyxh[c] += std::fabs(dy[k] * (x[k] - mean[c]) * is[c]);
    }
    for (int64_t c = 0; c < p.C; ++c) {
        b.mean[c] = L * kEps32 * abs_x[c] / count;
        b.var[c] = (L + 3) * kEps32 * var[c] + b.mean[c] * b.mean[c];
        b.invstd[c] = is[c] * (0.5 * b.var[c] / (var[c] + p.eps) + 2 * kEps32);
    }
    for (int64_t k = 0; k < n; ++k) {
        const int64_t c = (k / p.HW) % p.C;
        const double d = std::fabs(x[k] - mean[c]), xh = d * is[c];
        b.xhat[k] = d * b.invstd[c] + is[c] * b.mean[c] + 2 * kEps32 * xh;
        prop[c] += std::fabs(dy[k]) * b.xhat[k];
    }
    for (int64_t c = 0; c < p.C; ++c) {
        b.dbeta[c] = L * kEps32 * abs_dy[c];
        b.dgamma[c] = (L + 1) * kEps32 * abs_dyxh[c] + prop[c];
    }
    return b;
}

}  // namespace dt::test
