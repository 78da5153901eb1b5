// SPDX-License-Identifier: MIT
// Conv2d test shapes: Conv2dParams from (n, ci, h, w, co, kh, kw, stride, pad) with the output
// size derived as the kernels expect callers to (kernels/conv2d.h), the element counts of x, w
// and y, and a trace string. Shared so every conv2d test builds its cases the same way.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/ref/conv2d_order_ref.h"

namespace dt::test {

inline kernels::Conv2dParams geom(int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co,
                                  int64_t kh, int64_t kw, int64_t stride, int64_t pad) {
    kernels::Conv2dParams p{.n = n, .ci = ci, .h = h, .w = w, .co = co, .kh = kh, .kw = kw,
                            .stride = stride, .pad = pad};
    p.ho = (h + 2 * pad - kh) / stride + 1;
    p.wo = (w + 2 * pad - kw) / stride + 1;
    return p;
}

inline int64_t xsize(const kernels::Conv2dParams& p) { return p.n * p.ci * p.h * p.w; }
inline int64_t wsize(const kernels::Conv2dParams& p) { return p.co * p.ci * p.kh * p.kw; }
inline int64_t ysize(const kernels::Conv2dParams& p) { return p.n * p.co * p.ho * p.wo; }

/// "[n, ci, h, w, co, kh, kw, stride, pad]", for SCOPED_TRACE.
inline std::string describe(const kernels::Conv2dParams& p) {
    return ::testing::PrintToString(
        std::vector<int64_t>{p.n, p.ci, p.h, p.w, p.co, p.kh, p.kw, p.stride, p.pad});
}

/// conv.dgrad's per-tap value at input (s, c, ih, iw) and tap (ki, kj) into *t, false when the
/// tap's output position does not exist: kernels/ref/conv2d_order_ref.h's, on vectors.
inline bool dgrad_tap(const std::vector<float>& dy, const std::vector<float>& w,
                      const kernels::Conv2dParams& p, int64_t s, int64_t c, int64_t ih,
                      int64_t iw, int64_t ki, int64_t kj, float* t) {
    return kernels::ref::conv2d_dgrad_tap_order(dy.data(), w.data(), p, s, c, ih, iw, ki, kj, t);
}

}  // namespace dt::test
