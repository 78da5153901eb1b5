// SPDX-License-Identifier: MIT
// Reference batch normalisation in double precision (deliberately naive: plain loops, the
// textbook formulas of kernels/batchnorm2d.h evaluated in double).
#pragma once
#include <cmath>

#include "kernels/batchnorm2d.h"

namespace dt::kernels::ref {

inline void batchnorm2d_stats(const double* x, double* mean, double* var, double* invstd,
                              const BatchNorm2dParams& p) {
    const double count = static_cast<double>(p.N * p.HW);
    for (int64_t c = 0; c < p.C; ++c) {
        double s = 0.0;
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t i = 0; i < p.HW; ++i) s += x[(n * p.C + c) * p.HW + i];
        mean[c] = s / count;
        double q = 0.0;
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t i = 0; i < p.HW; ++i) {
                double d = x[(n * p.C + c) * p.HW + i] - mean[c];
                q += d * d;
            }
        var[c] = q / count;
        invstd[c] = 1.0 / std::sqrt(var[c] + static_cast<double>(p.eps));
    }
}

inline void batchnorm2d_invstd(const double* var, double* invstd, const BatchNorm2dParams& p) {
    for (int64_t c = 0; c < p.C; ++c) invstd[c] = 1.0 / std::sqrt(var[c] + double(p.eps));
}

inline void batchnorm2d_apply(const double* x, const double* mean, const double* invstd,
                              const double* gamma, const double* beta, double* y,
                              const BatchNorm2dParams& p) {
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t c = 0; c < p.C; ++c)
            for (int64_t i = 0; i < p.HW; ++i) {
                int64_t k = (n * p.C + c) * p.HW + i;
                y[k] = (x[k] - mean[c]) * invstd[c] * gamma[c] + beta[c];
            }
}

inline void batchnorm2d_update_running(double* running_mean, double* running_var,
                                       const double* mean, const double* var, double momentum,
                                       const BatchNorm2dParams& p) {
    const double count = static_cast<double>(p.N * p.HW);
    for (int64_t c = 0; c < p.C; ++c) {
        running_mean[c] = (1.0 - momentum) * running_mean[c] + momentum * mean[c];
        const double unbiased = var[c] * count / (count - 1);
        running_var[c] = (1.0 - momentum) * running_var[c] + momentum * unbiased;
    }
}

inline void batchnorm2d_backward(const double* dy, const double* x, const double* mean,
                                 const double* invstd, const double* gamma, double* dx,
                                 double* dgamma, double* dbeta, bool training,
                                 const BatchNorm2dParams& p) {
    const double count = static_cast<double>(p.N * p.HW);
    for (int64_t c = 0; c < p.C; ++c) {
        double sb = 0.0, sg = 0.0;
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t i = 0; i < p.HW; ++i) {
                int64_t k = (n * p.C + c) * p.HW + i;
                sb += dy[k];
                sg += dy[k] * (x[k] - mean[c]) * invstd[c];
            }
        dbeta[c] = sb;
        dgamma[c] = sg;
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t i = 0; i < p.HW; ++i) {
                int64_t k = (n * p.C + c) * p.HW + i;
                if (!training) {
                    dx[k] = dy[k] * gamma[c] * invstd[c];
                    continue;
                }
                double xhat = (x[k] - mean[c]) * invstd[c];
                dx[k] = gamma[c] * invstd[c] / count * (count * dy[k] - sb - xhat * sg);
            }
    }
}

}  // namespace dt::kernels::ref
