// SPDX-License-Identifier: MIT
// The double reference of causal self-attention (kernels/ref/attention_ref.h) on float inputs,
// with each output's error bound derived from the recipe of kernels/attention.h, to first order
// (a 1% margin covers the second-order terms); u = 2^-24, the unit roundoff:
//   score  |s^ - s| <= delta = (D + 4) u scale sum_d |q_d k_d|  (fma chain, the scale's two
//          roundings, the multiply); rowmax within max delta.
//   prob   p^_j = c e^{s_j} (1 + eta_j), eta_j = delta_j + u |s_j - m| + 4u (the subtraction,
//          dt_expf's 2 ulp); c is common to the row and cancels in out.
//   sums   a sum of n terms in leaves of a block's size: c_sum u sum|terms|, c_sum by the mode
//          (sum_c below; kahan and exact round each product once, then once or twice more).
//   out    |out^ - y| <= (2 max eta + (2 c_sum + 1) u) V,  V = sum_j pi_j |v_j| (the weights'
//          relative errors move y by at most max eta times sum pi |v - y|); rowsum likewise.
//   P      relative error eps_P = eta_tj + max eta + (c_sum + 1) u (over the forward's rowsum).
//   dS     scale [pi (alpha + beta + u |dP - Di|) + pi |dP - Di| (eps_P + 4u)], alpha, beta
//          the dot errors of dP and Di (Di's includes out's own bound).
//   dQ, dK, dV  the dS (or P) errors times |k|, |q| (|dout|), plus c_sum u sum|terms|.
// The magnitudes (sum|terms| of each output) are the Kahan check's scale.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/attention.h"
#include "kernels/common/accum_mode.h"
#include "kernels/ref/attention_ref.h"

namespace dt::test {

struct AttentionRef {
    std::vector<double> out, rowmax, rowsum, dqkv;          // the reference
    std::vector<double> out_b, rowmax_b, rowsum_b, dqkv_b;  // their bounds
    std::vector<double> out_mag, dqkv_mag;                  // sum|terms| per element
};

/// c_sum of a mode for n terms in nb leaves of at most `block` terms each.
inline double attention_sum_c(kernels::common::AccumMode m, int64_t n, int64_t nb, int64_t block) {
    using kernels::common::AccumMode;
    const double leaf = static_cast<double>(std::min(n, block));
    switch (m) {
        case AccumMode::kTree:
            return leaf + std::ceil(std::log2(static_cast<double>(nb))) + 1;
        case AccumMode::kKahan:
            return 4;
        case AccumMode::kExact:
            return 3;
        default:
            return leaf + static_cast<double>(nb) + 1;  // any order of the leaves
    }
}

/// The reference and bounds of the forward in mode `fwd` and, when dout is given, of the
/// backward in mode `bwd` (from the forward's outputs in mode `fwd`).
inline AttentionRef attention_reference(const std::vector<float>& qkv,
                                        const std::vector<float>* dout,
                                        const kernels::AttentionParams& p,
                                        kernels::common::AccumMode fwd,
                                        kernels::common::AccumMode bwd) {
    constexpr double u = 1.0 / 16777216.0, margin = 1.01;
    const int64_t T = p.T, D = p.D, C = p.H * p.D, pitch = 3 * C;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    AttentionRef r;
    const std::vector<double> x(qkv.begin(), qkv.end());
    r.out.assign(static_cast<std::size_t>(p.B * T * C), 0);
    r.out_b = r.out_mag = r.out;
    r.rowmax.assign(static_cast<std::size_t>(p.B * p.H * T), 0);
    r.rowmax_b = r.rowsum = r.rowsum_b = r.rowmax;
    kernels::ref::attention_forward(x.data(), r.out.data(), r.rowmax.data(), r.rowsum.data(), p);
    if (dout) {
        const std::vector<double> g(dout->begin(), dout->end());
        r.dqkv = r.dqkv_b = r.dqkv_mag = std::vector<double>(qkv.size(), 0);
        kernels::ref::attention_backward(x.data(), g.data(), r.dqkv.data(), p);
    }
    std::vector<double> P(static_cast<std::size_t>(T * T)), eta(P.size()), dS(P.size()),
        eS(P.size()), eP(P.size());
    const auto at = [&](int64_t b, int64_t t, int part, int64_t h) {
        return static_cast<std::size_t>((b * T + t) * pitch + part * C + h * D);
    };
    for (int64_t b = 0; b < p.B; ++b)
        for (int64_t h = 0; h < p.H; ++h) {
            const int64_t row0 = (b * p.H + h) * T;
            std::vector<double> rho(static_cast<std::size_t>(T)), beta(rho.size());
            for (int64_t t = 0; t < T; ++t) {
                const int64_t nb = kernels::attention_key_blocks(t);
                const double cs = attention_sum_c(fwd, t + 1, nb, kernels::kAttnKeyBlock);
                std::vector<double> s(static_cast<std::size_t>(t + 1)), dl(s.size());
                double mx = -INFINITY, dmax = 0, emax = 0, l = 0;
                for (int64_t j = 0; j <= t; ++j) {
                    double dot = 0, mag = 0;
                    for (int64_t d = 0; d < D; ++d) {
                        dot += double(qkv[at(b, t, 0, h) + d]) * qkv[at(b, j, 1, h) + d];
                        mag += std::fabs(double(qkv[at(b, t, 0, h) + d]) * qkv[at(b, j, 1, h) + d]);
                    }
                    s[j] = dot * scale, dl[j] = (D + 4) * u * scale * mag;
                    mx = std::max(mx, s[j]), dmax = std::max(dmax, dl[j]);
                }
                for (int64_t j = 0; j <= t; ++j) {
                    eta[t * T + j] = dl[j] + u * std::fabs(s[j] - mx) + 4 * u;
                    emax = std::max(emax, eta[t * T + j]);
                    l += std::exp(s[j] - mx);
                }
                for (int64_t j = 0; j <= t; ++j) P[t * T + j] = std::exp(s[j] - mx) / l;
                r.rowmax_b[row0 + t] = margin * dmax;
                r.rowsum_b[row0 + t] = margin * (dmax + emax + cs * u) * l;
                rho[t] = emax + (cs + 1) * u;
                for (int64_t d = 0; d < D; ++d) {
                    double V = 0;
                    for (int64_t j = 0; j <= t; ++j)
                        V += P[t * T + j] * std::fabs(double(qkv[at(b, j, 2, h) + d]));
                    const std::size_t o = static_cast<std::size_t>((b * T + t) * C + h * D + d);
                    r.out_mag[o] = V;
                    r.out_b[o] = margin * (2 * emax + (2 * cs + 1) * u) * V;
                }
            }
            if (!dout) continue;
            const auto g = [&](int64_t t, int64_t d) {
                return double((*dout)[static_cast<std::size_t>((b * T + t) * C + h * D + d)]);
            };
            for (int64_t t = 0; t < T; ++t) {
                double di = 0, dimag = 0, dib = 0;
                for (int64_t d = 0; d < D; ++d) {
                    const std::size_t o = static_cast<std::size_t>((b * T + t) * C + h * D + d);
                    di += g(t, d) * r.out[o];
                    dimag += std::fabs(g(t, d)) * (std::fabs(r.out[o]) + r.out_b[o]);
                    dib += std::fabs(g(t, d)) * r.out_b[o];
                }
                beta[t] = D * u * dimag + dib;
                for (int64_t j = 0; j <= t; ++j) {
                    double dp = 0, dpmag = 0;
                    for (int64_t d = 0; d < D; ++d) {
                        dp += g(t, d) * qkv[at(b, j, 2, h) + d];
                        dpmag += std::fabs(g(t, d) * qkv[at(b, j, 2, h) + d]);
                    }
                    const double pi = P[t * T + j], diff = std::fabs(dp - di);
                    eP[t * T + j] = eta[t * T + j] + rho[t];
                    dS[t * T + j] = pi * (dp - di) * scale;
                    eS[t * T + j] = margin * scale *
                                    (pi * (D * u * dpmag + beta[t] + u * diff) +
                                     pi * diff * (eP[t * T + j] + 4 * u));
                }
            }
            for (int64_t t = 0; t < T; ++t)  // dQ_t over keys
                for (int64_t d = 0; d < D; ++d) {
                    const double cs = attention_sum_c(bwd, t + 1, kernels::attention_key_blocks(t),
                                                      kernels::kAttnKeyBlock);
                    double mag = 0, err = 0;
                    for (int64_t j = 0; j <= t; ++j) {
                        const double k = qkv[at(b, j, 1, h) + d];
                        mag += std::fabs(dS[t * T + j] * k), err += eS[t * T + j] * std::fabs(k);
                    }
                    const std::size_t o = at(b, t, 0, h) + d;
                    r.dqkv_mag[o] = mag, r.dqkv_b[o] = err + margin * cs * u * mag;
                }
            for (int64_t j = 0; j < T; ++j)  // dK_j, dV_j over queries
                for (int64_t d = 0; d < D; ++d) {
                    const double cs =
                        attention_sum_c(bwd, T - j, kernels::attention_query_blocks(j, T),
                                        kernels::kAttnQueryBlock);
                    double kmag = 0, kerr = 0, vmag = 0, verr = 0;
                    for (int64_t t = j; t < T; ++t) {
                        const double q = qkv[at(b, t, 0, h) + d], gd = std::fabs(g(t, d));
                        kmag += std::fabs(dS[t * T + j] * q), kerr += eS[t * T + j] * std::fabs(q);
                        vmag += P[t * T + j] * gd,
                            verr += margin * eP[t * T + j] * P[t * T + j] * gd;
                    }
                    const std::size_t ok = at(b, j, 1, h) + d, ov = at(b, j, 2, h) + d;
                    r.dqkv_mag[ok] = kmag, r.dqkv_b[ok] = kerr + margin * cs * u * kmag;
                    r.dqkv_mag[ov] = vmag, r.dqkv_b[ov] = verr + margin * cs * u * vmag;
                }
        }
    return r;
}

}  // namespace dt::test
