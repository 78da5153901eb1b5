// SPDX-License-Identifier: MIT
// The conv2d forward of the CUDA backend as a tiled block program (an implicit GEMM: C = W . Xpad
// with C (Co, N*P), K = the taps r = (c, ki, kj)): a block of kConvTile x kConvTile threads owns
// kConvTile output channels x kConvTile output positions; for every chunk of kConvTile taps it
// loads the weights, the (padded) input values and the chunk's live-tap flags into shared
// memory, waits, and each thread continues its element's chain over the chunk's live taps in
// ascending order: the forward recipe of kernels/conv2d.h (padded positions of a live tap give
// fma(w, +0, acc); dead taps are left out). It also runs conv.dgrad's tree mode on
// conv2d_dgrad_is_forward shapes (the transposed convolution, FlippedWeight).
// conv.wgrad's group chains are a tiled block program of the same form (an implicit GEMM per
// group of samples: C = dY . Xpad^T with C (Co, R), K = the group's (sample, position) pairs in
// the chain's order), conv_wgrad_tiled_block, and so are conv.dgrad's per-tap values (a GEMM
// per tap: W_tap^T . dY), conv_dgrad_taps_tiled_block. Host tests: tests/support/block_runner.h
// (real barriers).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_bodies.h"

namespace dt::kernels::cuda {

inline constexpr int kConvTile = 16;
inline constexpr uint32_t kConvTileThreads = kConvTile * kConvTile;
/// Shared floats of a block: the weight tile, the input tile and the chunk's live flags.
inline constexpr int kConvTiledShared = 2 * kConvTile * kConvTile + kConvTile;

/// The padded input of convolution q at tap r = (c, ki, kj) and column j = (sample, output
/// position) of the implicit GEMM: x at the position the tap reads, or +0 in the padding.
DT_HD float conv_xpad(const float* x, const Conv2dParams& q, int64_t r, int64_t j) {
    const int64_t P = q.ho * q.wo;
    const int64_t c = r / (q.kh * q.kw), ki = (r / q.kw) % q.kh, kj = r % q.kw;
    const int64_t s = j / P, oh = (j % P) / q.wo, ow = j % q.wo;
    const int64_t ih = oh * q.stride - q.pad + ki, iw = ow * q.stride - q.pad + kj;
    return ih >= 0 && ih < q.h && iw >= 0 && iw < q.w ? x[((s * q.ci + c) * q.h + ih) * q.w + iw]
                                                      : 0.0f;
}

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
            xs[ty * kConvTile + tx] = rr < R && j < cols ? conv_xpad(x, q, rr, j) : 0.0f;
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

/// Where conv_wgrad_tiled_block puts the chain of group g for dw element (o, r), e = o * R + r
/// (live taps only): the atomic mode adds it into dw (zeroed first; no ORDER on purpose), the
/// others store it as leaf g of the element in a slice of output channels [o_lo, o_hi):
/// leaves[g * len + e - o_lo * R], len = (o_hi - o_lo) * R (conv2d_wgrad_combine_body's layout).
struct WgradAtomicOut {
    float* dw;
    DT_HD void operator()(int64_t, int64_t e, float acc) const {
        common::atomic_add_float(dw + e, acc);
    }
};
struct WgradLeafOut {
    float* leaves;
    int64_t e0, len;
    DT_HD void operator()(int64_t g, int64_t e, float acc) const { leaves[g * len + e - e0] = acc; }
};

/// Blocks of conv_wgrad_tiled_block per group: tiles of kConvTile output channels of
/// [o_lo, o_hi) x kConvTile taps.
DT_HD int64_t conv_wgrad_tiles(const Conv2dParams& p, int64_t o_lo, int64_t o_hi) {
    const int64_t R = p.ci * p.kh * p.kw;
    return ((o_hi - o_lo + kConvTile - 1) / kConvTile) * ((R + kConvTile - 1) / kConvTile);
}

/// The fma chains of conv.wgrad over groups of G consecutive samples (group g: samples
/// [g G, min(N, g G + G))) for the output channels [o_lo, o_hi): block b of
/// groups x conv_wgrad_tiles(p, o_lo, o_hi) owns group b / tiles and a tile of kConvTile
/// channels x kConvTile taps; for every chunk of kConvTile (sample, position) pairs of the group
/// it loads dy and the padded input into shared memory, waits, and each thread continues its
/// element's chain: ORDER: acc = fma(dy[s,o,p], xpad[s,r,p], acc) from +0 over the group's
/// samples ascending, positions ascending within each (conv_wgrad_chain's chain, padding
/// included as +0 operands), then hands it to out(g, e, acc) for a live tap.
template <class Sync, class Out>
DT_HD void conv_wgrad_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                                  const float* x, const float* dy, const Conv2dParams& p, int64_t G,
                                  int64_t o_lo, int64_t o_hi, const Out& out) {
    const int64_t P = p.ho * p.wo, R = p.ci * p.kh * p.kw;
    const int64_t tiles = conv_wgrad_tiles(p, o_lo, o_hi),
                  tiles_r = (R + kConvTile - 1) / kConvTile;
    const int64_t g = t.block / tiles, tile = t.block % tiles;
    const int64_t o0 = o_lo + (tile / tiles_r) * kConvTile, r0 = (tile % tiles_r) * kConvTile;
    const int64_t s0 = g * G, K = ((s0 + G < p.n ? s0 + G : p.n) - s0) * P;
    const int ty = static_cast<int>(t.thread / kConvTile);
    const int tx = static_cast<int>(t.thread % kConvTile);
    float* ds = shared;                          // ds[ty][kk] = dy(o0 + ty, k = k0 + kk)
    float* xs = shared + kConvTile * kConvTile;  // xs[kk][tx] = xpad(r0 + tx, k = k0 + kk)
    const int64_t o = o0 + ty, r = r0 + tx;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += kConvTile) {
        {  // load: dy of (channel o0 + ty, pair k0 + tx), the input of (tap r0 + tx, pair k0 + ty)
            const int64_t kd = k0 + tx;
            ds[ty * kConvTile + tx] =
                o < o_hi && kd < K ? dy[((s0 + kd / P) * p.co + o) * P + kd % P] : 0.0f;
            const int64_t kx = k0 + ty;
            xs[ty * kConvTile + tx] = r < R && kx < K ? conv_xpad(x, p, r, s0 * P + kx) : 0.0f;
        }
        sync();
        const int64_t kc = K - k0 < kConvTile ? K - k0 : kConvTile;
        for (int64_t kk = 0; kk < kc; ++kk)  // ORDER: (sample, position) ascending, one fma each
            acc = fmaf(ds[ty * kConvTile + kk], xs[kk * kConvTile + tx], acc);
        sync();
    }
    if (o < o_hi && r < R) {
        const int64_t ki = (r / p.kw) % p.kh, kj = r % p.kw;
        if (conv_tap_live(ki, p.h, p.ho, p.pad, p.stride) &&
            conv_tap_live(kj, p.w, p.wo, p.pad, p.stride))
            out(g, o * R + r, acc);
    }
}

/// Blocks of conv_dgrad_taps_tiled_block for samples [s_lo, s_hi): per tap, tiles of
/// kConvTile input channels x kConvTile (sample, output position) columns.
DT_HD int64_t conv_dgrad_tap_tiles(const Conv2dParams& p, int64_t s_lo, int64_t s_hi) {
    const int64_t cols = (s_hi - s_lo) * p.ho * p.wo;
    return p.kh * p.kw * ((p.ci + kConvTile - 1) / kConvTile) *
           ((cols + kConvTile - 1) / kConvTile);
}

/// conv.dgrad's per-tap values of samples [s_lo, s_hi) (kernels/conv2d.h: t[s,c,ki,kj,oh,ow],
/// the same in every mode) into t (DgradTapBuffer's layout, conv2d_bodies.h): per tap, a GEMM
/// W_tap^T (Ci x Co) . dY (Co x columns); block b of conv_dgrad_tap_tiles owns tap
/// b / (its tiles) and a tile of kConvTile channels x kConvTile columns; for every chunk of
/// kConvTile output channels it loads the weights and dy into shared memory, waits, and each
/// thread continues its value's chain: ORDER: acc = fma(w[o,c,ki,kj], dy[s,o,oh,ow], acc) from +0
/// over o ascending (conv_dgrad_tap's chain).
template <class Sync>
DT_HD void conv_dgrad_taps_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                                       const float* dy, const float* w, float* taps_out,
                                       const Conv2dParams& p, int64_t s_lo, int64_t s_hi) {
    const int64_t P = p.ho * p.wo, cols = (s_hi - s_lo) * P, KK = p.kh * p.kw;
    const int64_t tiles_c = (p.ci + kConvTile - 1) / kConvTile;
    const int64_t tiles_j = (cols + kConvTile - 1) / kConvTile, per_tap = tiles_c * tiles_j;
    const int64_t tap = t.block / per_tap, tile = t.block % per_tap;
    const int64_t c0 = (tile / tiles_j) * kConvTile, j0 = (tile % tiles_j) * kConvTile;
    const int ty = static_cast<int>(t.thread / kConvTile);
    const int tx = static_cast<int>(t.thread % kConvTile);
    float* ws = shared;                          // ws[ty][kk] = w(o = k0 + kk, c0 + ty, tap)
    float* ds = shared + kConvTile * kConvTile;  // ds[kk][tx] = dy(o = k0 + kk, column j0 + tx)
    const int64_t c = c0 + ty, j = j0 + tx;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < p.co; k0 += kConvTile) {
        {  // load: the weight of (channel c0 + ty, o = k0 + tx), dy of (o = k0 + ty, column j)
            const int64_t o_w = k0 + tx, o_d = k0 + ty;  // output channels of the two loads
            ws[ty * kConvTile + tx] =
                c < p.ci && o_w < p.co ? w[(o_w * p.ci + c) * KK + tap] : 0.0f;
            ds[ty * kConvTile + tx] =
                o_d < p.co && j < cols ? dy[((s_lo + j / P) * p.co + o_d) * P + j % P] : 0.0f;
        }
        sync();
        const int64_t kc = p.co - k0 < kConvTile ? p.co - k0 : kConvTile;
        for (int64_t kk = 0; kk < kc; ++kk)  // ORDER: o ascending, one fma each
            acc = fmaf(ws[ty * kConvTile + kk], ds[kk * kConvTile + tx], acc);
        sync();
    }
    if (c < p.ci && j < cols) taps_out[(tap * p.ci + c) * cols + j] = acc;
}

}  // namespace dt::kernels::cuda
