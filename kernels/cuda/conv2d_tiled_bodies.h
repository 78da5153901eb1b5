// SPDX-License-Identifier: MIT
// The GEMM-shaped conv2d kernels of the CUDA backend as block programs over the register-tiled
// program of tile_gemm.h (every output's chain in the recipe's order, so the CPU's bits):
//   forward      the implicit GEMM C = W . Xpad, C (Co, N*P), K = the taps r = (c, ki, kj), dead
//                taps left out (live flags): the forward recipe of kernels/conv2d.h (padded
//                positions of a live tap give fma(w, +0, acc)); also conv.dgrad's tree mode on
//                conv2d_dgrad_is_forward shapes (the transposed convolution, FlippedWeight)
//   wgrad        per group of samples, C = dY . Xpad^T, C (Co slice, R), K = the group's
//                (sample, position) pairs in the chain's order: the leaves (or atomic's group
//                chains) of conv.wgrad; its exact mode with limb atomics cuts the chains at every
//                sample's end and folds a group's leaves per output (conv_wgrad_exact_fold_block)
// conv.dgrad's other tiled programs (its per-tap values, its exact and atomic modes as the
// transposed forward) are in conv2d_dgrad_tiled_bodies.h.
// Each is a template on its tile shape S (tile_gemm.h; SmallTile by default): its blocks have
// S::kThreads threads and S::kShared shared floats. Host tests: tests/support/block_runner.h
// (real barriers).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_fold.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_operands.h"
#include "kernels/cuda/tile_gemm.h"

namespace dt::kernels::cuda {

/// The padded input of convolution q at tap r = (c, ki, kj) and column j = (sample, output
/// position) of the implicit GEMM: x at the position the tap reads, or +0 in the padding. The
/// definition; the block programs read it through ForwardInput and WgradInput
/// (conv2d_operands.h), which tests/kernels/cuda/tile_operands_test.cpp holds to it.
DT_HD float conv_xpad(const float* x, const Conv2dParams& q, int64_t r, int64_t j) {
    const int64_t P = q.ho * q.wo;
    const int64_t c = r / (q.kh * q.kw), ki = (r / q.kw) % q.kh, kj = r % q.kw;
    const int64_t s = j / P, oh = (j % P) / q.wo, ow = j % q.wo;
    const int64_t ih = oh * q.stride - q.pad + ki, iw = ow * q.stride - q.pad + kj;
    return ih >= 0 && ih < q.h && iw >= 0 && iw < q.w ? x[((s * q.ci + c) * q.h + ih) * q.w + iw]
                                                      : 0.0f;
}

/// Blocks of the tiled forward of convolution q: tiles of (output channels, N * Ho * Wo).
template <class S = SmallTile>
DT_HD int64_t conv_tiles(const Conv2dParams& q) {
    return tile_count<S>(q.co, q.n * q.ho * q.wo);
}

/// y (N, Co, Ho, Wo) of convolution q over x, weights through wt(o, c, ki, kj), + b[o] once
/// when b is not null. Thread t of block t.block of conv_tiles<S>(q) blocks. ORDER: each
/// output's chain over the live taps ascending (tile_gemm_block), then + b[o] once.
template <class S = SmallTile, class Weight, class Sync>
DT_HD void conv_forward_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                                    const float* x, const Weight& wt, const float* b, float* y,
                                    const Conv2dParams& q) {
    const int64_t P = q.ho * q.wo, cols = q.n * P, R = q.ci * q.kh * q.kw;
    // A(o, r) = wt(o, c, ki, kj), B(r, j) = conv_xpad(x, q, r, j), live: conv_tap_r_live(q, r)
    tile_gemm_block<S>(t, shared, sync, tile_origin<S>(t.block, cols), q.co, cols, R,
                       weight_operand(wt), ForwardInput::of(x, q), ZeroInit{},
                       columns_out([&](int64_t j) { return j / P * q.co * P + j % P; },
                                   [&](int64_t o, int64_t at, float acc) {
                                       y[at + o * P] = b != nullptr ? acc + b[o] : acc;
                                   }));
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

/// Blocks of conv_wgrad_tiled_block per group: tiles of the output channels [o_lo, o_hi) x
/// the R taps.
template <class S = SmallTile>
DT_HD int64_t conv_wgrad_tiles(const Conv2dParams& p, int64_t o_lo, int64_t o_hi) {
    return tile_count<S>(o_hi - o_lo, p.ci * p.kh * p.kw);
}

/// The fma chains of conv.wgrad over groups of G consecutive samples (group g: samples
/// [g G, min(N, g G + G))) for the output channels [o_lo, o_hi): block b of
/// groups x conv_wgrad_tiles<S>(p, o_lo, o_hi) owns group b / tiles and a tile of channels x
/// taps.
/// ORDER: acc = fma(dy[s,o,p], xpad[s,r,p], acc) from +0 over the group's samples ascending,
/// positions ascending within each (conv_wgrad_chain's chain, padding included as +0
/// operands), then out(g, e, acc) for a live tap, e = o * R + r.
template <class S = SmallTile, class Sync, class Out>
DT_HD void conv_wgrad_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                                  const float* x, const float* dy, const Conv2dParams& p, int64_t G,
                                  int64_t o_lo, int64_t o_hi, const Out& out) {
    const int64_t P = p.ho * p.wo, R = p.ci * p.kh * p.kw;
    const int64_t tiles = conv_wgrad_tiles<S>(p, o_lo, o_hi);
    const int64_t g = t.block / tiles, s0 = g * G;
    const int64_t K = ((s0 + G < p.n ? s0 + G : p.n) - s0) * P;
    // A(i, k) = dy[s0 + k / P, o_lo + i, k % P], B(k, r) = conv_xpad(x, p, r, s0 * P + k)
    tile_gemm_block<S>(t, shared, sync, tile_origin<S>(t.block % tiles, R), o_hi - o_lo, R, K,
                       WgradGradOut::of(dy, p, s0, o_lo), WgradInput::of(x, p, s0), ZeroInit{},
                       columns_out(  // a dead tap's column: -1
                           [&](int64_t r) { return conv_tap_r_live(p, r) ? r : int64_t{-1}; },
                           [&](int64_t i, int64_t r, float acc) {
                               if (r >= 0) out(g, (o_lo + i) * R + r, acc);
                           }));
}

/// The slots of thread th of the wgrad tile at o (tile_cell's) inside C (m channels x R taps)
/// whose tap is live, as bits, worked out once: a dead tap's chains (+0 operands) are no output.
template <class S>
DT_HD SlotMask<S> wgrad_live_slots(int th, const TileOrigin& o, int64_t m, const Conv2dParams& p) {
    const int64_t R = p.ci * p.kh * p.kw;
    SlotMask<S> live = 0;
    DT_UNROLL
    for (int q = 0; q < S::kTM * S::kTN; ++q) {
        const TileCell cell = tile_cell<S>(th, o, q);
        if (cell.i < m && cell.j < R && conv_tap_r_live(p, cell.j)) live |= SlotMask<S>{1} << q;
    }
    return live;
}

/// conv.wgrad's per-sample leaves (conv_wgrad_tiled_block's chains with G = 1) of B samples a
/// block for the channels [o_lo, o_hi): block b of groups x conv_wgrad_tiles<S>(p, o_lo, o_hi)
/// runs samples [b / tiles * B, + B)'s chains as one cut at every sample's end
/// (tile_gemm_cut_block), so that the samples share the block's set-up and first fetch (a
/// sample of 16 positions is two chunks), and gives each piece to out(s, e, leaf) (sample s's
/// leaf of element e = o * R + r, live taps only: WgradLeafOut's layout with g = s).
/// ORDER: each leaf's chain as conv_wgrad_tiled_block's (fma over the sample's positions
/// ascending from +0).
template <class S = SmallTile, class Sync, class Out>
DT_HD void conv_wgrad_sample_leaves_block(const common::GridPos& t, float* shared, const Sync& sync,
                                          const float* x, const float* dy, const Conv2dParams& p,
                                          int64_t B, int64_t o_lo, int64_t o_hi, const Out& out) {
    const int64_t P = p.ho * p.wo, R = p.ci * p.kh * p.kw;
    const int64_t tiles = conv_wgrad_tiles<S>(p, o_lo, o_hi);
    const int64_t s0 = t.block / tiles * B;
    const int64_t K = ((s0 + B < p.n ? s0 + B : p.n) - s0) * P;
    const TileOrigin o = tile_origin<S>(t.block % tiles, R);
    const SlotMask<S> live = wgrad_live_slots<S>(static_cast<int>(t.thread), o, o_hi - o_lo, p);
    int64_t s = s0;  // the sample whose leaves the next cut ends
    const auto piece = [&](int q, int64_t i, int64_t r, float leaf, bool) {
        if ((live >> q) & 1u) out(s, (o_lo + i) * R + r, leaf);
    };
    const auto done = [&](bool) { ++s; };
    // A(i, k) = dy[s0 + k / P, o_lo + i, k % P], B(k, r) = conv_xpad(x, p, r, s0 * P + k)
    tile_gemm_cut_block<S>(t, shared, sync, o, o_hi - o_lo, R, K, WgradGradOut::of(dy, p, s0, o_lo),
                           WgradInput::of(x, p, s0), P, piece, done);
}

/// Shared floats of conv_wgrad_exact_fold_block's blocks: the tile program's panels, then a
/// double per output of the tile (its thread's running sum) and a float (a leaf put aside):
/// 30 KiB for the small tile, 108 KiB for the large (dynamic shared memory, two blocks a SM).
template <class S>
inline constexpr int kWgradFoldShared = S::kShared + 3 * (S::kM * S::kN);

/// The exact mode of conv.wgrad with integer atomics, a group of G samples per block: block b
/// of groups x conv_wgrad_tiles<S>(p, 0, p.co) runs group b / tiles's chains, cut at every
/// sample's end (tile_gemm_cut_block: the exact mode's per-sample leaves, conv_wgrad_tiled_block's
/// chains with G = 1), and each thread folds an output's leaves into a running double while
/// that stays exact (kernels/common/accum_exact_fold.h), moving it into the element's
/// accumulator with integer atomics (accs zeroed first, or a split batch's exact_out) when the
/// next leaf would round it and at the group's end: three limb atomics per output and group
/// where the group's leaves lie within about 29 binades (adding each leaf takes two), and no
/// leaves stored. The accumulators then hold the exact sums of the leaves, whatever the order of
/// the blocks and atomics, and their rounding (conv2d_wgrad_exact_round_body) gives the exact
/// mode's bits. Dead taps add nothing (their dw is +0, as the leaves' way gives).
/// A cut runs the common case for each of a thread's outputs in line (the leaf added to the
/// running double where that is exact) and puts the others' leaves aside, then takes those,
/// and at the group's end every output, through one loop (the moves, atomics, infinities and
/// NaN): so the code a cut runs stays short (one copy of the rare path, not one per output).
/// ORDER: each leaf's chain as conv_wgrad_tiled_block's (fma over the sample's positions
/// ascending from +0); the sums: none.
template <class S = SmallTile, class Sync>
DT_HD void conv_wgrad_exact_fold_block(const common::GridPos& t, float* shared, const Sync& sync,
                                       const float* x, const float* dy, const Conv2dParams& p,
                                       int64_t G, common::ExactAcc* accs) {
    constexpr int kSlots = S::kTM * S::kTN, kT = static_cast<int>(S::kThreads);
    using Mask = SlotMask<S>;
    const int64_t P = p.ho * p.wo, R = p.ci * p.kh * p.kw;
    const int64_t tiles = conv_wgrad_tiles<S>(p, 0, p.co);
    const int64_t s0 = t.block / tiles * G;
    const int64_t K = ((s0 + G < p.n ? s0 + G : p.n) - s0) * P;
    const TileOrigin o = tile_origin<S>(t.block % tiles, R);
    const int th = static_cast<int>(t.thread);
    // Slot q of this thread (tile_cell's) keeps its running double at part[q * kT] and a leaf
    // put aside at aside[q * kT]: only this thread touches them (no barrier), a warp's in a row.
    double* const parts = reinterpret_cast<double*>(shared + S::kShared);  // kM kN of them
    double* part = parts + th;
    float* aside = reinterpret_cast<float*>(parts + S::kM * S::kN) + th;
    DT_UNROLL
    for (int q = 0; q < kSlots; ++q) part[q * kT] = 0.0;
    const Mask live = wgrad_live_slots<S>(th, o, p.co, p);  // dead taps never reach accs
    Mask rare = 0;  // slots whose leaf is aside
    const auto piece = [&](int q, int64_t, int64_t, float leaf, bool) {
        if (((live >> q) & 1u) == 0u) return;
        double& d = part[q * kT];
        const double b = static_cast<double>(leaf), sum = d + b;
        // exact_fold's common case (an infinite or NaN leaf fails the test: sum - b is NaN)
        if (common::exact_double_sum_is_exact(d, b, sum)) {
            d = sum;
        } else {
            aside[q * kT] = leaf;
            rare |= Mask{1} << q;
        }
    };
    const auto done = [&](bool last) {
        for (Mask todo = last ? live : rare; todo != 0u; todo &= todo - 1u) {
            const int q = lowest_slot(todo);
            const TileCell cell = tile_cell<S>(th, o, q);
            common::ExactAcc* dst = accs + cell.i * R + cell.j;
            if ((rare >> q) & 1u) common::exact_fold_atomic(part[q * kT], aside[q * kT], dst);
            if (last) common::exact_atomic_add_double(dst, part[q * kT]);
        }
        rare = 0;
    };
    // A(o, k) = dy[s0 + k / P, o, k % P], B(k, r) = conv_xpad(x, p, r, s0 * P + k)
    tile_gemm_cut_block<S>(t, shared, sync, o, p.co, R, K, WgradGradOut::of(dy, p, s0, 0),
                           WgradInput::of(x, p, s0), P, piece, done);
}

}  // namespace dt::kernels::cuda
