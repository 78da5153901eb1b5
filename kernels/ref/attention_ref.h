// SPDX-License-Identifier: MIT
// Reference causal self-attention in double precision with std::exp (naive loops, the full
// softmax of each query row over keys 0..t). Shapes and layout: kernels/attention.h. The backward
// recomputes everything from qkv and dout: P, dP = dout_t . v_j, Di = sum_j P_tj dP_tj
// (= dout_t . out_t), dS = P (dP - Di) / sqrt(D).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention.h"

namespace dt::kernels::ref {

namespace attention_detail {

/// P[t * T + j] (j <= t) of head h in sequence b, and each row's max and sum.
inline void softmax_rows(const double* qkv, const AttentionParams& p, int64_t b, int64_t h,
                         std::vector<double>& P, double* m, double* l) {
    const int64_t T = p.T, D = p.D, C = p.H * p.D;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    P.assign(static_cast<std::size_t>(T * T), 0.0);
    for (int64_t t = 0; t < T; ++t) {
        const double* q = qkv + (b * T + t) * 3 * C + h * D;
        double mx = -INFINITY;
        for (int64_t j = 0; j <= t; ++j) {
            const double* k = qkv + (b * T + j) * 3 * C + C + h * D;
            double s = 0;
            for (int64_t d = 0; d < D; ++d) s += q[d] * k[d];
            P[t * T + j] = s * scale;
            mx = std::max(mx, s * scale);
        }
        double sum = 0;
        for (int64_t j = 0; j <= t; ++j) sum += std::exp(P[t * T + j] - mx);
        for (int64_t j = 0; j <= t; ++j) P[t * T + j] = std::exp(P[t * T + j] - mx) / sum;
        m[t] = mx;
        l[t] = sum;
    }
}

}  // namespace attention_detail

inline void attention_forward(const double* qkv, double* out, double* rowmax, double* rowsum,
                              const AttentionParams& p) {
    const int64_t T = p.T, D = p.D, C = p.H * p.D;
    std::vector<double> P;
    for (int64_t b = 0; b < p.B; ++b)
        for (int64_t h = 0; h < p.H; ++h) {
            const int64_t row0 = (b * p.H + h) * T;
            attention_detail::softmax_rows(qkv, p, b, h, P, rowmax + row0, rowsum + row0);
            for (int64_t t = 0; t < T; ++t)
                for (int64_t d = 0; d < D; ++d) {
                    double o = 0;
                    for (int64_t j = 0; j <= t; ++j)
                        o += P[t * T + j] * qkv[(b * T + j) * 3 * C + 2 * C + h * D + d];
                    out[(b * T + t) * C + h * D + d] = o;
                }
        }
}

inline void attention_backward(const double* qkv, const double* dout, double* dqkv,
                               const AttentionParams& p) {
    const int64_t T = p.T, D = p.D, C = p.H * p.D;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    std::vector<double> P, dS(static_cast<std::size_t>(T * T)), m(T), l(T);
    for (int64_t i = 0; i < p.B * T * 3 * C; ++i) dqkv[i] = 0;
    for (int64_t b = 0; b < p.B; ++b)
        for (int64_t h = 0; h < p.H; ++h) {
            attention_detail::softmax_rows(qkv, p, b, h, P, m.data(), l.data());
            auto q = [&](int64_t t) { return qkv + (b * T + t) * 3 * C + h * D; };
            auto g = [&](int64_t t) { return dout + (b * T + t) * C + h * D; };
            for (int64_t t = 0; t < T; ++t) {
                double di = 0;
                std::vector<double> dp(static_cast<std::size_t>(t + 1));
                for (int64_t j = 0; j <= t; ++j) {
                    for (int64_t d = 0; d < D; ++d) dp[j] += g(t)[d] * q(j)[2 * C + d];
                    di += P[t * T + j] * dp[j];
                }
                for (int64_t j = 0; j <= t; ++j)
                    dS[t * T + j] = P[t * T + j] * (dp[j] - di) * scale;
            }
            for (int64_t t = 0; t < T; ++t)
                for (int64_t j = 0; j <= t; ++j)
                    for (int64_t d = 0; d < D; ++d) {
                        dqkv[(b * T + t) * 3 * C + h * D + d] += dS[t * T + j] * q(j)[C + d];
                        dqkv[(b * T + j) * 3 * C + C + h * D + d] += dS[t * T + j] * q(t)[d];
                        dqkv[(b * T + j) * 3 * C + 2 * C + h * D + d] += P[t * T + j] * g(t)[d];
                    }
        }
}

}  // namespace dt::kernels::ref
