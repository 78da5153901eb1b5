// SPDX-License-Identifier: MIT
// conv2d's float ORDER (kernels/conv2d.h) as plain loops: the bits every conv2d kernel of the
// tree mode must give, on every ISA path and device. Deliberately naive: one fma chain per output
// in the order the recipe states, nothing blocked or vectorised. The double reference of the same
// op is conv2d_ref.h.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/conv2d.h"
#include "kernels/ref/conv2d_ref.h"

namespace dt::kernels::ref {

/// Tap (ki, kj) reads the image at some output position (kernels/conv2d.h: live taps).
inline bool conv2d_tap_live(const Conv2dParams& p, int64_t ki, int64_t kj) {
    bool row = false, col = false;
    for (int64_t oh = 0; oh < p.ho; ++oh)
        row |= oh * p.stride - p.pad + ki >= 0 && oh * p.stride - p.pad + ki < p.h;
    for (int64_t ow = 0; ow < p.wo; ++ow)
        col |= ow * p.stride - p.pad + kj >= 0 && ow * p.stride - p.pad + kj < p.w;
    return row && col;
}

/// conv.dgrad's per-tap value at input (s, c, ih, iw) and tap (ki, kj) into *t; false (t
/// untouched) when the tap's output position (oh, ow) does not exist.
/// ORDER: the fma chain from +0 over o ascending of w[o,c,ki,kj] * dy[s,o,oh,ow].
inline bool conv2d_dgrad_tap_order(const float* dy, const float* w, const Conv2dParams& p,
                                   int64_t s, int64_t c, int64_t ih, int64_t iw, int64_t ki,
                                   int64_t kj, float* t) {
    const int64_t th = ih + p.pad - ki, tw = iw + p.pad - kj;
    if (th < 0 || tw < 0 || th % p.stride || tw % p.stride) return false;
    const int64_t oh = th / p.stride, ow = tw / p.stride;
    if (oh >= p.ho || ow >= p.wo) return false;
    float v = 0.0f;
    for (int64_t o = 0; o < p.co; ++o)
        v = std::fma(w[((o * p.ci + c) * p.kh + ki) * p.kw + kj],
                     dy[((s * p.co + o) * p.ho + oh) * p.wo + ow], v);
    *t = v;
    return true;
}

/// y = conv(x, w) + b. ORDER: per output, the fma chain from +0 over (c, ki, kj) ascending of the
/// live taps, then + b[o].
inline void conv2d_forward_order(const float* x, const float* w, const float* b, float* y,
                                 const Conv2dParams& p) {
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t oh = 0; oh < p.ho; ++oh)
                for (int64_t ow = 0; ow < p.wo; ++ow) {
                    float acc = 0.0f;
                    for (int64_t c = 0; c < p.ci; ++c)
                        for (int64_t ki = 0; ki < p.kh; ++ki)
                            for (int64_t kj = 0; kj < p.kw; ++kj)
                                if (conv2d_tap_live(p, ki, kj))
                                    acc = std::fma(w[((o * p.ci + c) * p.kh + ki) * p.kw + kj],
                                                   conv2d_detail::at(
                                                       x, p, s, c, oh * p.stride - p.pad + ki,
                                                       ow * p.stride - p.pad + kj),
                                                   acc);
                    y[((s * p.co + o) * p.ho + oh) * p.wo + ow] = acc + b[o];
                }
}

/// conv.dgrad, tree mode. ORDER: on the shapes of conv2d_dgrad_is_forward one fma chain over o
/// ascending, then taps descending, over the positions that exist; otherwise per tap a chain
/// over o (conv2d_dgrad_tap_order), the taps added in ascending order from +0.
inline void conv2d_backward_data_order(const float* dy, const float* w, float* dx,
                                       const Conv2dParams& p) {
    const bool as_forward = conv2d_dgrad_is_forward(p);
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t c = 0; c < p.ci; ++c)
            for (int64_t ih = 0; ih < p.h; ++ih)
                for (int64_t iw = 0; iw < p.w; ++iw) {
                    float acc = 0.0f;
                    if (as_forward) {
                        for (int64_t o = 0; o < p.co; ++o)
                            for (int64_t ki = p.kh - 1; ki >= 0; --ki)
                                for (int64_t kj = p.kw - 1; kj >= 0; --kj) {
                                    const int64_t oh = ih + p.pad - ki, ow = iw + p.pad - kj;
                                    if (oh < 0 || ow < 0 || oh >= p.ho || ow >= p.wo) continue;
                                    acc = std::fma(w[((o * p.ci + c) * p.kh + ki) * p.kw + kj],
                                                   dy[((s * p.co + o) * p.ho + oh) * p.wo + ow],
                                                   acc);
                                }
                    } else {
                        for (int64_t ki = 0; ki < p.kh; ++ki)
                            for (int64_t kj = 0; kj < p.kw; ++kj)
                                if (float t; conv2d_dgrad_tap_order(dy, w, p, s, c, ih, iw, ki,
                                                                    kj, &t))
                                    acc = acc + t;
                    }
                    dx[((s * p.ci + c) * p.h + ih) * p.w + iw] = acc;
                }
}

/// conv.wgrad, tree mode. ORDER: one leaf per group of conv2d_tree_group(Ho * Wo) samples, the
/// fma chain from +0 continued over the group's samples in order, positions ascending within
/// each (a dead tap: +0); then the left-complete tree over the groups (reduce_tree.h).
inline void conv2d_backward_weight_order(const float* x, const float* dy, float* dw,
                                         const Conv2dParams& p) {
    const int64_t L = p.co * p.ci * p.kh * p.kw, G = conv2d_tree_group(p.ho * p.wo);
    const int64_t groups = (p.n + G - 1) / G;
    std::vector<float> leaves(static_cast<std::size_t>(groups * L));
    for (int64_t gi = 0; gi < groups; ++gi)
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t c = 0; c < p.ci; ++c)
                for (int64_t ki = 0; ki < p.kh; ++ki)
                    for (int64_t kj = 0; kj < p.kw; ++kj) {
                        float acc = 0.0f;
                        for (int64_t s = gi * G;
                             s < std::min(p.n, (gi + 1) * G) && conv2d_tap_live(p, ki, kj); ++s)
                            for (int64_t oh = 0; oh < p.ho; ++oh)
                                for (int64_t ow = 0; ow < p.wo; ++ow)
                                    acc = std::fma(dy[((s * p.co + o) * p.ho + oh) * p.wo + ow],
                                                   conv2d_detail::at(
                                                       x, p, s, c, oh * p.stride - p.pad + ki,
                                                       ow * p.stride - p.pad + kj),
                                                   acc);
                        leaves[gi * L + ((o * p.ci + c) * p.kh + ki) * p.kw + kj] = acc;
                    }
    for (int64_t e = 0; e < L; ++e) dw[e] = common::reduce_tree_combine(&leaves[e], groups, L);
}

}  // namespace dt::kernels::ref
