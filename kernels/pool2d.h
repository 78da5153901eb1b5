// SPDX-License-Identifier: MIT
// Contract of the 2-D pooling kernels. x, dx are (N, C, H, W); y, dy, argmax are (N, C, Ho, Wo)
// with Ho = (H + 2*padding - kernel) / stride + 1 (floor), same for Wo. Every (n, c) plane is
// owned by one loop iteration, forward and backward.
//
// Numeric recipe:
//   max:        y = the first maximum in row-major window order (strict >; padded cells never
//               win; a NaN wins over any number, the first NaN over later ones). argmax is the
//               offset ih * W + iw of the winner inside its (n, c) input plane (int32).
//   avg:        y = (sum of the window's in-range cells in row-major order from +0) / (k * k)
//               (padded cells count in the divisor, count_include_pad = true).   // ORDER
//   global avg: y = (sum over H*W in index order from +0) / (H*W as float).          // ORDER
// Backward (site pool.backward, AccumMode in Params; only kTree today): dx plane starts at +0,
// output windows are visited in row-major order and each adds its gradient into its cells:
//   max: dx[argmax] = dx[argmax] + dy;   avg: g = dy / (k * k), then dx[cell] = dx[cell] + g
//   for the window's in-range cells in row-major order;   global avg: dx = dy / (H*W).
// The CPU max-pool forward has a 2x2 stride-2 fast path giving the same bits as the general loop.
#pragma once
#include <cstdint>

#include "kernels/common/accum_mode.h"

namespace dt::kernels {

struct Pool2dParams {
    int64_t N = 0, C = 0, H = 0, W = 0;  // input (N, C, H, W)
    int64_t Ho = 0, Wo = 0;              // output (N, C, Ho, Wo)
    int kernel = 2, stride = 2, padding = 0;
    common::AccumMode mode = common::AccumMode::kTree;  // pool.backward
};

/// Output extent for one spatial dimension (may be <= 0 for invalid settings; ops check).
inline int64_t pool2d_out_size(int64_t in, int kernel, int stride, int padding) {
    return (in + 2 * padding - kernel) / stride + 1;
}

namespace ref {
void maxpool2d_forward(const double* x, double* y, int32_t* argmax, const Pool2dParams& p);
void maxpool2d_backward(const double* dy, const int32_t* argmax, double* dx,
                        const Pool2dParams& p);
void avgpool2d_forward(const double* x, double* y, const Pool2dParams& p);
void avgpool2d_backward(const double* dy, double* dx, const Pool2dParams& p);
void global_avgpool_forward(const double* x, double* y, int64_t planes, int64_t hw);
void global_avgpool_backward(const double* dy, double* dx, int64_t planes, int64_t hw);
}  // namespace ref

namespace cpu {
void maxpool2d_forward(const float* x, float* y, int32_t* argmax, const Pool2dParams& p);
void maxpool2d_backward(const float* dy, const int32_t* argmax, float* dx, const Pool2dParams& p);
void avgpool2d_forward(const float* x, float* y, const Pool2dParams& p);
void avgpool2d_backward(const float* dy, float* dx, const Pool2dParams& p);
/// x (planes, hw) -> y (planes).
void global_avgpool_forward(const float* x, float* y, int64_t planes, int64_t hw);
/// dy (planes) -> dx (planes, hw).
void global_avgpool_backward(const float* dy, float* dx, int64_t planes, int64_t hw);
}  // namespace cpu

}  // namespace dt::kernels
