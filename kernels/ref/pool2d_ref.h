// SPDX-License-Identifier: MIT
// Reference pooling in double precision (deliberately naive: every window walked cell by cell).
#pragma once
#include <cmath>

#include "kernels/pool2d.h"

namespace dt::kernels::ref {

inline void maxpool2d_forward(const double* x, double* y, int32_t* argmax, const Pool2dParams& p) {
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                double best = 0.0;
                int64_t at = -1;
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        int64_t ih = oh * p.stride - p.padding + kh;
                        int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                        double v = x[(pl * p.H + ih) * p.W + iw];
                        bool better = at < 0 || v > best || (std::isnan(v) && !std::isnan(best));
                        if (better) best = v, at = ih * p.W + iw;
                    }
                y[(pl * p.Ho + oh) * p.Wo + ow] = best;
                argmax[(pl * p.Ho + oh) * p.Wo + ow] = static_cast<int32_t>(at);
            }
}

inline void maxpool2d_backward(const double* dy, const int32_t* argmax, double* dx,
                               const Pool2dParams& p) {
    for (int64_t i = 0; i < p.N * p.C * p.H * p.W; ++i) dx[i] = 0.0;
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t o = 0; o < p.Ho * p.Wo; ++o)
            dx[pl * p.H * p.W + argmax[pl * p.Ho * p.Wo + o]] += dy[pl * p.Ho * p.Wo + o];
}

inline void avgpool2d_forward(const double* x, double* y, const Pool2dParams& p) {
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                double s = 0.0;
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        int64_t ih = oh * p.stride - p.padding + kh;
                        int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                            s += x[(pl * p.H + ih) * p.W + iw];
                    }
                y[(pl * p.Ho + oh) * p.Wo + ow] = s / (p.kernel * p.kernel);
            }
}

inline void avgpool2d_backward(const double* dy, double* dx, const Pool2dParams& p) {
    for (int64_t i = 0; i < p.N * p.C * p.H * p.W; ++i) dx[i] = 0.0;
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow)
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        int64_t ih = oh * p.stride - p.padding + kh;
                        int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                            dx[(pl * p.H + ih) * p.W + iw] +=
                                dy[(pl * p.Ho + oh) * p.Wo + ow] / (p.kernel * p.kernel);
                    }
}

inline void global_avgpool_forward(const double* x, double* y, int64_t planes, int64_t hw) {
    for (int64_t pl = 0; pl < planes; ++pl) {
        double s = 0.0;
        for (int64_t i = 0; i < hw; ++i) s += x[pl * hw + i];
        y[pl] = s / static_cast<double>(hw);
    }
}

inline void global_avgpool_backward(const double* dy, double* dx, int64_t planes, int64_t hw) {
    for (int64_t pl = 0; pl < planes; ++pl)
        for (int64_t i = 0; i < hw; ++i) dx[pl * hw + i] = dy[pl] / static_cast<double>(hw);
}

}  // namespace dt::kernels::ref
