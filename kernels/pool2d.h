// SPDX-License-Identifier: MIT
// Contract of the 2-D pooling kernels. x, dx are (N, C, H, W); y, dy, argmax are (N, C, Ho, Wo)
// with Ho = (H + 2*padding - kernel) / stride + 1 (floor), same for Wo. Every (n, c) plane is
// owned by one loop iteration, forward and backward (except the backward's atomic mode).
//
// Numeric recipe:
//   max:        y = the first maximum in row-major window order (strict >; padded cells never
//               win; a NaN wins over any number, the first NaN over later ones). argmax is the
//               offset ih * W + iw of the winner inside its (n, c) input plane (int32).
//   avg:        y = (sum of the window's in-range cells in row-major order from +0) / (k * k)
//               (padded cells count in the divisor, count_include_pad = true).   // ORDER
//   global avg: y = (sum over H*W in index order from +0) / (H*W as float).          // ORDER
// Backward (site pool.backward, the AccumSpec `accum` in the Params): every output window adds
// its gradient into input cells; a dx cell sums the contributions of all windows covering it:
//   max: window o contributes dy[o] to its argmax cell;
//   avg: window o contributes g = dy[o] / (k * k) (one division per window) to each in-range cell;
//   global avg: dx = dy / (H*W) in every cell (no reduction: not a site, no mode).
// Modes (how each dx cell combines its contributions; windows are numbered row-major in their
// plane, o = oh * Wo + ow, and an avg window's cells are visited in row-major order):
//   kTree      dx plane from +0, windows in row-major order, dx[cell] = dx[cell] + c   // ORDER
//   kKahan     the same order with kahan_add into one KahanSum per cell from (+0, +0), then
//              kahan_value per cell
//   kExact     exact_value of the exact sum of the cell's contributions. CPU: a double per
//              cell from +0 with a TwoSum check of every addition (then one rounding to float),
//              and an ExactAcc pass for the rare cells where an addition was inexact or hit
//              inf/NaN; the same bits as an ExactAcc per cell
//   kPermuted  as kTree but windows visited in the order o = order[0], order[1], ... with
//              order = permute_order(Ho * Wo, accum.permute_key): ONE permutation of the window
//              indices per kernel call, applied to every (n, c) plane
//   kAtomic    dx zeroed, then the windows of all planes split across threads (contiguous static
//              ranges of windows), each contribution atomic-added into dx (atomic_add.h): the
//              order at a cell shared by two threads' windows is decided by timing (only
//              cells where two threads' ranges meet are shared: differing results are rare)
// No overlap: with stride >= kernel no two windows share a cell, so every cell receives at most
// one contribution c and every mode's recipe gives +0 + c (exact: c rounded once = c; kahan:
// c + comp 0), the same bits (NaN payloads aside: exact returns the canonical quiet NaN). The
// CPU kernel then takes the tree loop for every mode; the tests also run every mode's own path
// on overlapping windows whose contributions land in distinct cells and get the tree's bits.
// The CPU max-pool forward has a 2x2 stride-2 fast path giving the same bits as the general loop.
#pragma once
#include <cstdint>

#include "kernels/common/accum_mode.h"
#include "kernels/common/hd.h"

namespace dt::kernels {

struct Pool2dParams {
    int64_t N = 0, C = 0, H = 0, W = 0;  // input (N, C, H, W)
    int64_t Ho = 0, Wo = 0;              // output (N, C, Ho, Wo)
    int kernel = 2, stride = 2, padding = 0;
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);  // pool.backward
};

/// The max-pool order relation: v replaces the current best iff it is larger, or it is the first
/// NaN (NaN propagates, as in PyTorch). Strictness makes the first maximum win. Written as
/// !(v <= best) && best == best (same truth table as v > best || (v is NaN && best is not)),
/// which compiles to two compares and one and (20% faster in the CPU's 2x2 fast path).
DT_HD bool pool_max_better(float v, float best) { return !(v <= best) && best == best; }

/// Window (oh, ow): its first input row/column and its kernel rows [kh0, kh1) and columns
/// [kw0, kw1) that fall inside the input.
struct PoolWindow {
    int64_t ih0, iw0;
    int kh0, kh1, kw0, kw1;
};
DT_HD PoolWindow pool_window(int64_t oh, int64_t ow, const Pool2dParams& p) {
    PoolWindow w;
    w.ih0 = oh * p.stride - p.padding;
    w.iw0 = ow * p.stride - p.padding;
    w.kh0 = static_cast<int>(w.ih0 < 0 ? -w.ih0 : 0);
    w.kh1 = static_cast<int>(p.H - w.ih0 < p.kernel ? p.H - w.ih0 : p.kernel);
    w.kw0 = static_cast<int>(w.iw0 < 0 ? -w.iw0 : 0);
    w.kw1 = static_cast<int>(p.W - w.iw0 < p.kernel ? p.W - w.iw0 : p.kernel);
    return w;
}

/// Output extent for one spatial dimension (may be <= 0 for invalid settings; ops check).
inline int64_t pool2d_out_size(int64_t in, int kernel, int stride, int padding) {
    return (in + 2 * padding - kernel) / stride + 1;
}

namespace ref {
inline void maxpool2d_forward(const double* x, double* y, int32_t* argmax, const Pool2dParams& p);
inline void maxpool2d_backward(const double* dy, const int32_t* argmax, double* dx,
                               const Pool2dParams& p);
inline void avgpool2d_forward(const double* x, double* y, const Pool2dParams& p);
inline void avgpool2d_backward(const double* dy, double* dx, const Pool2dParams& p);
inline void global_avgpool_forward(const double* x, double* y, int64_t planes, int64_t hw);
inline void global_avgpool_backward(const double* dy, double* dx, int64_t planes, int64_t hw);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/pool2d.cpp) and cuda::
// (kernels/cuda/pool2d.cu: device pointers, the engine's stream). global_avgpool_forward:
// x (planes, hw) -> y (planes); global_avgpool_backward: dy (planes) -> dx (planes, hw).
#define DT_POOL2D_KERNELS                                                                     \
    void maxpool2d_forward(const float* x, float* y, int32_t* argmax, const Pool2dParams& p); \
    void maxpool2d_backward(const float* dy, const int32_t* argmax, float* dx,                \
                            const Pool2dParams& p);                                           \
    void avgpool2d_forward(const float* x, float* y, const Pool2dParams& p);                  \
    void avgpool2d_backward(const float* dy, float* dx, const Pool2dParams& p);               \
    void global_avgpool_forward(const float* x, float* y, int64_t planes, int64_t hw);        \
    void global_avgpool_backward(const float* dy, float* dx, int64_t planes, int64_t hw);

namespace cpu {
DT_POOL2D_KERNELS
}  // namespace cpu

namespace cuda {
DT_POOL2D_KERNELS
}  // namespace cuda

#undef DT_POOL2D_KERNELS

}  // namespace dt::kernels
