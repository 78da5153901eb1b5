// SPDX-License-Identifier: MIT
// Error bounds of the layer-norm kernels against the double reference (kernels/layer_norm.h),
// shared by tests/kernels/cpu/layer_norm_test.cpp and tests/kernels/modes/layer_norm_entries.cpp.
// A sum of terms whose every term passes through at most L roundings errs by at most
// L * eps32 * sum|terms|. L of a row sum R over C features: ceil(C / 32) in a leaf's chain, then
// ceil(log2 L) tree levels over its L = min(C, 32) leaves (L additions in any order: permuted),
// + 2 (the division by C, slack). L of a sum over tokens G: T in a sequence's leaf, then
// ceil(log2 B) over the B leaves (B in any order: permuted and atomic), + 2. Exact and kahan
// take tree's L (their error is smaller). Those errors are carried to first order through the
// formulas, plus a few roundings per formula (each step below says which).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/accum_mode.h"
#include "kernels/layer_norm.h"
#include "tests/support/compare.h"

namespace dt::test {

/// L of a row sum R in mode m.
inline double layer_norm_row_terms(int64_t C, kernels::common::AccumMode m) {
    const double leaves = static_cast<double>(std::min<int64_t>(C, 32));
    const double chain = std::ceil(static_cast<double>(C) / 32.0);
    return chain + 2 +
           (m == kernels::common::AccumMode::kPermuted ? leaves : std::ceil(std::log2(leaves)));
}

/// L of a sum over tokens G in mode m.
inline double layer_norm_grad_terms(const kernels::LayerNormParams& p,
                                    kernels::common::AccumMode m) {
    const bool any_order =
        m == kernels::common::AccumMode::kPermuted || m == kernels::common::AccumMode::kAtomic;
    const double B = static_cast<double>(p.M / p.T);
    return static_cast<double>(p.T) + 2 + (any_order ? B : std::ceil(std::log2(B)));
}

/// The forward's outputs and their bounds, in double.
struct LayerNormForwardBounds {
    std::vector<double> y, mean, rstd;
};

/// Bounds of y (M * C), mean and rstd (M) for row sums of L terms, from the inputs and the double
/// reference's mean and rstd:
///   mean  L * eps * sum|x| / C
///   var   (L + 3) * eps * var + mean_err^2 (var's terms (x - mean)^2: the mean's error cancels
///         to first order, as in batch norm)
///   rstd  rstd * (var_err / (2 * (var + eps)) + 2 * eps)   (sqrt's and division's roundings)
///   xhat  |x - mean| * rstd_err + rstd * mean_err + 2 * eps * |xhat|
///   y     |gamma| * xhat_err + 2 * eps * (|xhat * gamma| + |beta|)   (product and sum)
inline LayerNormForwardBounds layer_norm_forward_bounds(const kernels::LayerNormParams& p, double L,
                                                        const std::vector<double>& x,
                                                        const std::vector<double>& gamma,
                                                        const std::vector<double>& beta,
                                                        const std::vector<double>& mean,
                                                        const std::vector<double>& rstd) {
    const auto M = static_cast<std::size_t>(p.M), C = static_cast<std::size_t>(p.C);
    LayerNormForwardBounds b{std::vector<double>(M * C), std::vector<double>(M),
                             std::vector<double>(M)};
    for (std::size_t m = 0; m < M; ++m) {
        double ax = 0, var = 0;
        for (std::size_t i = 0; i < C; ++i) {
            ax += std::fabs(x[m * C + i]);
            var += (x[m * C + i] - mean[m]) * (x[m * C + i] - mean[m]);
        }
        var /= static_cast<double>(C);
        b.mean[m] = L * kEps32 * ax / static_cast<double>(C);
        const double var_err = (L + 3) * kEps32 * var + b.mean[m] * b.mean[m];
        b.rstd[m] = rstd[m] * (0.5 * var_err / (var + p.eps) + 2 * kEps32);
        for (std::size_t i = 0; i < C; ++i) {
            const double d = std::fabs(x[m * C + i] - mean[m]), xh = d * rstd[m];
            const double xhat_err = d * b.rstd[m] + rstd[m] * b.mean[m] + 2 * kEps32 * xh;
            b.y[m * C + i] = std::fabs(gamma[i]) * xhat_err +
                             2 * kEps32 * (xh * std::fabs(gamma[i]) + std::fabs(beta[i]));
        }
    }
    return b;
}

/// The backward's magnitudes, scaled: {dx, dgamma, dbeta}. With g = dy * gamma, xhat from the
/// (float, given) mean and rstd, A1 = sum over the row |g|, A2 = sum |g * xhat|:
///   dx      |rstd| * (c_g * A1 / C + |xhat| * c_h * A2 / C + c_r * (|g| + A1 / C + |xhat| * A2 /
///   C)) dbeta   c_db * sum over tokens |dy|        dgamma  c_dg * sum |dy * xhat|
/// The bounds: c_g = (Lr + 2) eps (R(g) and m1's division, g's product), c_h = (Lr + 4) eps
/// (g * xhat's products and xhat's two roundings too), c_r = 5 eps (dx's own four roundings and
/// xhat's in xhat * m2), c_db = Lg eps, c_dg = (Lg + 3) eps. All 1: the magnitudes.
struct LayerNormBackwardScales {
    double g = 1, h = 1, r = 1, db = 1, dg = 1;
};
inline std::vector<std::vector<double>> layer_norm_backward_scaled(
    const kernels::LayerNormParams& p, const std::vector<float>& dy, const std::vector<float>& x,
    const std::vector<float>& mean, const std::vector<float>& rstd, const std::vector<float>& gamma,
    const LayerNormBackwardScales& c) {
    const auto M = static_cast<std::size_t>(p.M), C = static_cast<std::size_t>(p.C);
    std::vector<double> dx(M * C), dg(C), db(C);
    for (std::size_t m = 0; m < M; ++m) {
        const double rs = std::fabs(static_cast<double>(rstd[m]));
        const auto xhat = [&](std::size_t i) {
            return std::fabs((static_cast<double>(x[m * C + i]) - mean[m]) * rstd[m]);
        };
        double a1 = 0, a2 = 0;
        for (std::size_t i = 0; i < C; ++i) {
            const double d = std::fabs(static_cast<double>(dy[m * C + i]));
            const double g = d * std::fabs(static_cast<double>(gamma[i]));
            a1 += g, a2 += g * xhat(i);
            db[i] += d, dg[i] += d * xhat(i);
        }
        a1 /= static_cast<double>(C), a2 /= static_cast<double>(C);
        for (std::size_t i = 0; i < C; ++i) {
            const double g = std::fabs(static_cast<double>(dy[m * C + i]) * gamma[i]);
            dx[m * C + i] = rs * (c.g * a1 + xhat(i) * c.h * a2 + c.r * (g + a1 + xhat(i) * a2));
        }
    }
    for (std::size_t i = 0; i < C; ++i) db[i] *= c.db, dg[i] *= c.dg;
    return {dx, dg, db};
}

/// The backward's bounds in mode m: the scales of layer_norm_backward_scaled's comment.
inline LayerNormBackwardScales layer_norm_backward_bound_scales(const kernels::LayerNormParams& p,
                                                                kernels::common::AccumMode m) {
    const double lr = layer_norm_row_terms(p.C, m), lg = layer_norm_grad_terms(p, m);
    return {(lr + 2) * kEps32, (lr + 4) * kEps32, 5 * kEps32, lg * kEps32, (lg + 3) * kEps32};
}

}  // namespace dt::test
