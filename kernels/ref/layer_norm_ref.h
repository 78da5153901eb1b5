// SPDX-License-Identifier: MIT
// Reference layer normalisation in double precision (deliberately naive: plain loops, the
// textbook formulas of kernels/layer_norm.h evaluated in double, sums in index order).
#pragma once
#include <cmath>

#include "kernels/layer_norm.h"

namespace dt::kernels::ref {

inline void layer_norm_forward(const double* x, const double* gamma, const double* beta, double* y,
                               double* mean, double* rstd, const LayerNormParams& p) {
    const double count = static_cast<double>(p.C);
    for (int64_t m = 0; m < p.M; ++m) {
        const double* xr = x + m * p.C;
        double s = 0.0;
        for (int64_t i = 0; i < p.C; ++i) s += xr[i];
        mean[m] = s / count;
        double q = 0.0;
        for (int64_t i = 0; i < p.C; ++i) q += (xr[i] - mean[m]) * (xr[i] - mean[m]);
        rstd[m] = 1.0 / std::sqrt(q / count + static_cast<double>(p.eps));
        for (int64_t i = 0; i < p.C; ++i)
            y[m * p.C + i] = (xr[i] - mean[m]) * rstd[m] * gamma[i] + beta[i];
    }
}

inline void layer_norm_backward(const double* dy, const double* x, const double* mean,
                                const double* rstd, const double* gamma, double* dx, double* dgamma,
                                double* dbeta, const LayerNormParams& p) {
    const double count = static_cast<double>(p.C);
    for (int64_t c = 0; c < p.C; ++c) dgamma[c] = dbeta[c] = 0.0;
    for (int64_t m = 0; m < p.M; ++m) {
        const double *dyr = dy + m * p.C, *xr = x + m * p.C;
        double s1 = 0.0, s2 = 0.0;
        for (int64_t i = 0; i < p.C; ++i) {
            const double xhat = (xr[i] - mean[m]) * rstd[m];
            s1 += dyr[i] * gamma[i];
            s2 += dyr[i] * gamma[i] * xhat;
            dbeta[i] += dyr[i];
            dgamma[i] += dyr[i] * xhat;
        }
        for (int64_t i = 0; i < p.C; ++i) {
            const double xhat = (xr[i] - mean[m]) * rstd[m];
            dx[m * p.C + i] = rstd[m] * (dyr[i] * gamma[i] - s1 / count - xhat * (s2 / count));
        }
    }
}

}  // namespace dt::kernels::ref
