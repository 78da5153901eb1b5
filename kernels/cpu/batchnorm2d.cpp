// SPDX-License-Identifier: MIT
// Batch normalisation on the CPU; recipe and ORDER in kernels/batchnorm2d.h. Per-(n, c) leaves
// are computed in parallel (each row owned by one iteration), then each channel's N leaves are
// combined by the fixed tree of reduce_tree.h; elementwise passes own one (n, c) row each.
#include "kernels/batchnorm2d.h"

#include <cmath>
#include <vector>

#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;

constexpr int64_t kRowBlock = 8;          // rows summed side by side (ILP only, not order)
constexpr int64_t kParallelMin = 32768;   // elements below which one thread is faster

// ORDER: leaves[r * S + s] = ((0 + t_s(r, 0)) + t_s(r, 1)) + ... + t_s(r, len - 1) for every
// row r, each in its own accumulator; kRowBlock rows advance together only to hide add latency.
template <int S, typename Term>
void row_sums_sequential(int64_t rows, int64_t len, float* leaves, Term term) {
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t r0 = b * kRowBlock;
        if (r0 + kRowBlock <= rows) {
            float acc[kRowBlock][S] = {};
            for (int64_t i = 0; i < len; ++i) {
                for (int64_t j = 0; j < kRowBlock; ++j) {
                    float t[S];
                    term(r0 + j, i, t);
                    for (int s = 0; s < S; ++s) acc[j][s] = acc[j][s] + t[s];
                }
            }
            for (int64_t j = 0; j < kRowBlock; ++j)
                for (int s = 0; s < S; ++s) leaves[(r0 + j) * S + s] = acc[j][s];
        } else {
            for (int64_t r = r0; r < rows; ++r) {
                float acc[S] = {};
                for (int64_t i = 0; i < len; ++i) {
                    float t[S];
                    term(r, i, t);
                    for (int s = 0; s < S; ++s) acc[s] = acc[s] + t[s];
                }
                for (int s = 0; s < S; ++s) leaves[r * S + s] = acc[s];
            }
        }
    }
}

// The accumulation of sites bn.stats and bn.backward: totals[c * S + s] = sum over (n, i) of
// t_s(n * C + c, i). kTree: one leaf per sample (row_sums_sequential), then reduce_tree_combine
// over the N leaves of the channel (stride C * S).
template <int S, typename Term>
void channel_totals(const BatchNorm2dParams& p, float* totals, Term term) {
    std::vector<float> leaves(static_cast<std::size_t>(p.N * p.C * S));
    switch (p.mode) {
        case AccumMode::kTree:
            row_sums_sequential<S>(p.N * p.C, p.HW, leaves.data(), term);
            for (int64_t c = 0; c < p.C; ++c)
                for (int s = 0; s < S; ++s)
                    totals[c * S + s] =
                        common::reduce_tree_combine(leaves.data() + c * S + s, p.N, p.C * S);
            break;
    }
}

}  // namespace

void batchnorm2d_invstd(const float* var, float* invstd, const BatchNorm2dParams& p) {
    // ORDER: invstd = 1 / sqrt(var + eps), sqrt and division correctly rounded.
    for (int64_t c = 0; c < p.C; ++c) invstd[c] = 1.0f / std::sqrt(var[c] + p.eps);
}

void batchnorm2d_stats(const float* x, float* mean, float* var, float* invstd,
                       const BatchNorm2dParams& p) {
    const float count = static_cast<float>(p.N * p.HW);
    const int64_t C = p.C, HW = p.HW;
    // ORDER: mean = total(x) / count.
    channel_totals<1>(p, mean, [=](int64_t r, int64_t i, float* t) { t[0] = x[r * HW + i]; });
    for (int64_t c = 0; c < C; ++c) mean[c] = mean[c] / count;
    // ORDER: var = total((x - mean) * (x - mean)) / count (second pass, biased).
    channel_totals<1>(p, var, [=](int64_t r, int64_t i, float* t) {
        const float d = x[r * HW + i] - mean[r % C];
        t[0] = d * d;
    });
    for (int64_t c = 0; c < C; ++c) var[c] = var[c] / count;
    batchnorm2d_invstd(var, invstd, p);
}

void batchnorm2d_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, float* y, const BatchNorm2dParams& p) {
    const int64_t rows = p.N * p.C, HW = p.HW;
#pragma omp parallel for schedule(static) if (rows * HW >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r % p.C;
        const float m = mean[c], is = invstd[c], g = gamma[c], b = beta[c];
        const float* xr = x + r * HW;
        float* yr = y + r * HW;
        // ORDER: ((x - mean) * invstd) * gamma + beta.
        for (int64_t i = 0; i < HW; ++i) yr[i] = ((xr[i] - m) * is) * g + b;
    }
}

void batchnorm2d_update_running(float* running_mean, float* running_var, const float* mean,
                                const float* var, float momentum, const BatchNorm2dParams& p) {
    const float count = static_cast<float>(p.N * p.HW);
    const float keep = 1.0f - momentum;
    const float unbias = count / (count - 1.0f);
    for (int64_t c = 0; c < p.C; ++c) {
        // ORDER: (keep * running) + (momentum * batch), batch var unbiased as var * unbias.
        running_mean[c] = keep * running_mean[c] + momentum * mean[c];
        running_var[c] = keep * running_var[c] + momentum * (var[c] * unbias);
    }
}

void batchnorm2d_backward(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, float* dx, float* dgamma, float* dbeta,
                          bool training, const BatchNorm2dParams& p) {
    const int64_t C = p.C, HW = p.HW, rows = p.N * p.C;
    // totals[2c] = total(dy), totals[2c + 1] = total(dy * xhat), xhat = (x - mean) * invstd.
    std::vector<float> totals(static_cast<std::size_t>(2 * C));
    channel_totals<2>(p, totals.data(), [=](int64_t r, int64_t i, float* t) {
        const int64_t c = r % C;
        const float g = dy[r * HW + i];
        t[0] = g;
        t[1] = g * ((x[r * HW + i] - mean[c]) * invstd[c]);
    });
    for (int64_t c = 0; c < C; ++c) {
        dbeta[c] = totals[static_cast<std::size_t>(2 * c)];
        dgamma[c] = totals[static_cast<std::size_t>(2 * c + 1)];
    }
    const float count = static_cast<float>(p.N * HW);
#pragma omp parallel for schedule(static) if (rows * HW >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r % C;
        const float* g = dy + r * HW;
        float* d = dx + r * HW;
        if (!training) {
            const float k = gamma[c] * invstd[c];
            for (int64_t i = 0; i < HW; ++i) d[i] = g[i] * k;  // ORDER: dy * (gamma * invstd)
            continue;
        }
        const float* xr = x + r * HW;
        const float m = mean[c], is = invstd[c], sb = dbeta[c], sg = dgamma[c];
        const float k = (gamma[c] * is) / count;
        // ORDER: k * (((count * dy) - dbeta) - (xhat * dgamma)), xhat = (x - mean) * invstd.
        for (int64_t i = 0; i < HW; ++i) {
            const float xhat = (xr[i] - m) * is;
            d[i] = k * (((count * g[i]) - sb) - xhat * sg);
        }
    }
}

}  // namespace dt::kernels::cpu
