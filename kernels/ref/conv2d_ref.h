// SPDX-License-Identifier: MIT
// Reference conv2d in double precision (deliberately naive direct loops; see kernels/conv2d.h).
#pragma once
#include "kernels/conv2d.h"

namespace dt::kernels::ref {

namespace conv2d_detail {
/// x[s, c, ih, iw] with zero padding outside the image (double here, float in
/// conv2d_order_ref.h).
template <class T>
inline T at(const T* x, const Conv2dParams& p, int64_t s, int64_t c, int64_t ih, int64_t iw) {
    if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) return T(0);
    return x[((s * p.ci + c) * p.h + ih) * p.w + iw];
}
}  // namespace conv2d_detail

inline void conv2d_forward(const double* x, const double* w, const double* b, double* y,
                           const Conv2dParams& p) {
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t oh = 0; oh < p.ho; ++oh)
                for (int64_t ow = 0; ow < p.wo; ++ow) {
                    double acc = 0.0;
                    for (int64_t c = 0; c < p.ci; ++c)
                        for (int64_t ki = 0; ki < p.kh; ++ki)
                            for (int64_t kj = 0; kj < p.kw; ++kj)
                                acc += w[((o * p.ci + c) * p.kh + ki) * p.kw + kj] *
                                       conv2d_detail::at(x, p, s, c, oh * p.stride - p.pad + ki,
                                                         ow * p.stride - p.pad + kj);
                    y[((s * p.co + o) * p.ho + oh) * p.wo + ow] = acc + (b ? b[o] : 0.0);
                }
}

inline void conv2d_backward_data(const double* dy, const double* w, double* dx,
                                 const Conv2dParams& p) {
    for (int64_t i = 0; i < p.n * p.ci * p.h * p.w; ++i) dx[i] = 0.0;
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t oh = 0; oh < p.ho; ++oh)
                for (int64_t ow = 0; ow < p.wo; ++ow) {
                    const double g = dy[((s * p.co + o) * p.ho + oh) * p.wo + ow];
                    for (int64_t c = 0; c < p.ci; ++c)
                        for (int64_t ki = 0; ki < p.kh; ++ki)
                            for (int64_t kj = 0; kj < p.kw; ++kj) {
                                const int64_t ih = oh * p.stride - p.pad + ki;
                                const int64_t iw = ow * p.stride - p.pad + kj;
                                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                                dx[((s * p.ci + c) * p.h + ih) * p.w + iw] +=
                                    w[((o * p.ci + c) * p.kh + ki) * p.kw + kj] * g;
                            }
                }
}

inline void conv2d_backward_weight(const double* x, const double* dy, double* dw,
                                   const Conv2dParams& p) {
    for (int64_t o = 0; o < p.co; ++o)
        for (int64_t c = 0; c < p.ci; ++c)
            for (int64_t ki = 0; ki < p.kh; ++ki)
                for (int64_t kj = 0; kj < p.kw; ++kj) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < p.n; ++s)
                        for (int64_t oh = 0; oh < p.ho; ++oh)
                            for (int64_t ow = 0; ow < p.wo; ++ow)
                                acc += dy[((s * p.co + o) * p.ho + oh) * p.wo + ow] *
                                       conv2d_detail::at(x, p, s, c, oh * p.stride - p.pad + ki,
                                                         ow * p.stride - p.pad + kj);
                    dw[((o * p.ci + c) * p.kh + ki) * p.kw + kj] = acc;
                }
}

}  // namespace dt::kernels::ref
