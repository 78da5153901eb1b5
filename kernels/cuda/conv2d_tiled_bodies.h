// SPDX-License-Identifier: MIT
// The conv2d forward of the CUDA backend as a tiled block program (an implicit GEMM: C = W . Xpad
// with C (Co, N*P), K = the taps r = (c, ki, kj)): a block of kConvTile x kConvTile threads owns
// kConvTile output channels x kConvTile output positions; for every chunk of kConvTile taps it
// loads the weights, the (padded) input values and the chunk's live-tap flags into shared
// memory, waits, and each thread continues its element's chain over the chunk's live taps in
// ascending order: the forward recipe of kernels/conv2d.h (padded positions of a live tap give
// fma(w, +0, acc); dead taps are left out). It also runs conv.dgrad's tree mode on
// conv2d_dgrad_is_forward shapes (the transposed convolution, FlippedWeight). Host tests:
// tests/support/block_runner.h (real barriers).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_bodies.h"

namespace dt::kernels::cuda {

inline constexpr int kConvTile = 16;
inline constexpr uint32_t kConvTileThreads = kConvTile * kConvTile;
/// Shared floats of a block: the weight tile, the input tile and the chunk's live flags.
inline constexpr int kConvTiledShared = 2 * kConvTile * kConvTile + kConvTile;

/// Blocks of the tiled forward of convolution q: tiles of (output channels, N * Ho * Wo).
DT_HD int64_t conv_tiles(const Conv2dParams& q) {
    const int64_t cols = q.n * q.ho * q.wo;
    return ((q.co + kConvTile - 1) / kConvTile) * ((cols + kConvTile - 1) / kConvTile);
}

/// y (N, Co, Ho, Wo) of convolution q over x, weights through wt(o, c, ki, kj), + b[o] once
/// when b is not null. Thread t of block t.block of conv_tiles(q) blocks.
template <class Weight, class Sync>
DT_HD void conv_forward_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                                    const float* x, const Weight& wt, const float* b, float* y,
                                    const Conv2dParams& q) {
    const int64_t P = q.ho * q.wo, cols = q.n * P, R = q.ci * q.kh * q.kw;
    const int64_t tiles_c = (cols + kConvTile - 1) / kConvTile;
    const int64_t o0 = (t.block / tiles_c) * kConvTile, j0 = (t.block % tiles_c) * kConvTile;
    const int ty = static_cast<int>(t.thread / kConvTile);
    const int tx = static_cast<int>(t.thread % kConvTile);
    float* ws = shared;                          // ws[ty][kk] = w(o0 + ty, r = k0 + kk)
    float* xs = shared + kConvTile * kConvTile;  // xs[kk][tx] = xpad(r = k0 + kk, col j0 + tx)
    float* live = shared + 2 * kConvTile * kConvTile;  // live[kk]: tap k0 + kk is live
    const int64_t o = o0 + ty, j = j0 + tx;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < R; k0 += kConvTile) {
        {  // load: the weight of (o, k0 + tx), the input of (k0 + ty, column j), a flag per tap
            const int64_t r = k0 + tx;
            const int64_t c = r / (q.kh * q.kw), ki = (r / q.kw) % q.kh, kj = r % q.kw;
            ws[ty * kConvTile + tx] = o < q.co && r < R ? wt(o, c, ki, kj) : 0.0f;
            if (ty == 0) {
                live[tx] = r < R && conv_tap_live(ki, q.h, q.ho, q.pad, q.stride) &&
                                   conv_tap_live(kj, q.w, q.wo, q.pad, q.stride)
                               ? 1.0f
                               : 0.0f;
            }
            const int64_t rr = k0 + ty;
            float xv = 0.0f;
            if (rr < R && j < cols) {
                const int64_t cc = rr / (q.kh * q.kw), kki = (rr / q.kw) % q.kh, kkj = rr % q.kw;
                const int64_t s = j / P, oh = (j % P) / q.wo, ow = j % q.wo;
                const int64_t ih = oh * q.stride - q.pad + kki, iw = ow * q.stride - q.pad + kkj;
                if (ih >= 0 && ih < q.h && iw >= 0 && iw < q.w)
                    xv = x[((s * q.ci + cc) * q.h + ih) * q.w + iw];
            }
            xs[ty * kConvTile + tx] = xv;
        }
        sync();
        const int64_t kc = R - k0 < kConvTile ? R - k0 : kConvTile;
        for (int64_t kk = 0; kk < kc; ++kk) {  // ORDER: live taps ascending, one fma each
            if (live[kk] != 0.0f) acc = fmaf(ws[ty * kConvTile + kk], xs[kk * kConvTile + tx], acc);
        }
        sync();
    }
    if (o < q.co && j < cols) {
        const int64_t s = j / P, p = j % P;
        y[(s * q.co + o) * P + p] = b != nullptr ? acc + b[o] : acc;  // ORDER: then + b[o], once
    }
}

}  // namespace dt::kernels::cuda
