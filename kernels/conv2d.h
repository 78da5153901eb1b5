// SPDX-License-Identifier: MIT
// Contract of the conv2d kernels (cross-correlation, PyTorch's conv2d), NCHW:
//   x (N, Ci, H, W), w (Co, Ci, Kh, Kw), b (Co) or null, y (N, Co, Ho, Wo),
//   Ho = (H + 2 pad - Kh) / stride + 1, Wo likewise; zero padding on every side.
// Index names: R = Ci*Kh*Kw (taps, r = (ci*Kh + ki)*Kw + kj), P = Ho*Wo (positions,
// p = oh*Wo + ow), input row ih = oh*stride - pad + ki, column iw = ow*stride - pad + kj.
//
// Numeric recipes (the CPU kernels; ref:: computes the same sums in double):
// - forward:  ORDER: y[s,o,p] = (+0 + sum over r ascending of w[o,r] * xpad[s,r,p]) + b[o]
//             (gemm_f32_k_sequential over r, padded taps contribute +-0, then one bias add).
// - conv.dgrad (tree mode): ORDER: dx[s,c,ih,iw] = +0 + sum over taps (ki,kj) ascending whose
//             position (oh,ow) exists of t, where t = +0 + sum over o ascending of
//             w[o,c,ki,kj] * dy[s,o,oh,ow]  (per-sample GEMM W^T dY, then col2im in tap order).
// - conv.wgrad (tree mode): leaf_s[o,r] = +0 + sum over p ascending of dy[s,o,p] * xpad[s,r,p];
//             ORDER: dw = left-complete tree (kernels/common/reduce_tree.h) over s = 0..N-1.
// - bias.grad: the bias_add_backward kernel (kernels/bias_add.h) with C = Co, P = Ho*Wo.
// Threads own samples (forward, dgrad, wgrad leaves) or element slices (tree merges); no result
// depends on the thread count or the ISA path (kernels/gemm.h).
#pragma once
#include <cstdint>

#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct Conv2dParams {
    int64_t n = 0, ci = 0, h = 0, w = 0;  // input
    int64_t co = 0, kh = 0, kw = 0;       // weight
    int64_t stride = 1, pad = 0;
    int64_t ho = 0, wo = 0;               // output (callers compute them, see above)
    common::AccumMode mode = common::AccumMode::kTree;  // of the site being computed
};

namespace ref {
void conv2d_forward(const double* x, const double* w, const double* b, double* y,
                    const Conv2dParams& p);
void conv2d_backward_data(const double* dy, const double* w, double* dx, const Conv2dParams& p);
void conv2d_backward_weight(const double* x, const double* dy, double* dw,
                            const Conv2dParams& p);
}  // namespace ref

namespace cpu {
/// x (N,Ci,H,W), w (Co,Ci,Kh,Kw), b (Co) or nullptr -> y (N,Co,Ho,Wo).
void conv2d_forward(const float* x, const float* w, const float* b, float* y,
                    const Conv2dParams& p);
/// conv.dgrad: dy (N,Co,Ho,Wo), w (Co,Ci,Kh,Kw) -> dx (N,Ci,H,W), overwritten.
void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dParams& p);
/// conv.wgrad: x (N,Ci,H,W), dy (N,Co,Ho,Wo) -> dw (Co,Ci,Kh,Kw), overwritten.
void conv2d_backward_weight(const float* x, const float* dy, float* dw, const Conv2dParams& p);
}  // namespace cpu

}  // namespace dt::kernels
