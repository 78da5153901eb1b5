// SPDX-License-Identifier: MIT
// conv.dgrad's tiled block programs (over tile_gemm.h's register-tiled program), host-device:
//   taps         per tap, C = W_tap^T . dY, C (Ci, N*P slice), K = Co: the per-tap values into a
//                buffer (every mode has them; conv2d_bodies.h then sums each element's)
//   exact cut    on conv2d_dgrad_is_forward shapes, the transposed forward with its taps in
//                tap-major order (K = (tap, o)) and every chain cut after each tap's Co terms:
//                the pieces are the per-tap values, each thread folds its outputs' pieces into
//                running doubles (exact while Fast2Sum says so) and writes the rounded sum; no
//                buffer (the taps' way writes and reads 9 floats per dx element of a 3x3 layer)
//   atomic split on the same shapes, the transposed forward's K split by kernel row over blocks,
//                each block's row chains atomic-added into dx (the blocks race: the real
//                nondeterminism of the atomic mode, and a kernel row's blocks more to fill the SMs)
// Each is a template on its tile shape S (tile_gemm.h). Host tests: tests/support/block_runner.h
// (real barriers), tests/kernels/cuda/conv2d_dgrad_tiled_test.cpp.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact_fold.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/divisor.h"
#include "kernels/common/grid.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_operands.h"
#include "kernels/cuda/tile_gemm.h"

namespace dt::kernels::cuda {

/// Blocks of conv_dgrad_taps_tiled_block for samples [s_lo, s_hi): per tap, tiles of the Ci
/// input channels x the (sample, output position) columns.
template <class S = SmallTile>
DT_HD int64_t conv_dgrad_tap_tiles(const Conv2dParams& p, int64_t s_lo, int64_t s_hi) {
    return p.kh * p.kw * tile_count<S>(p.ci, (s_hi - s_lo) * p.ho * p.wo);
}

/// conv.dgrad's per-tap values of samples [s_lo, s_hi) (kernels/conv2d.h: t[s,c,ki,kj,oh,ow],
/// the same in every mode) into taps_out (DgradTapBuffer's layout, conv2d_bodies.h): per tap, the
/// GEMM W_tap^T (Ci x Co) . dY (Co x columns); block b of conv_dgrad_tap_tiles<S> owns tap
/// b / (its tiles) and a tile of channels x columns. ORDER: acc = fma(w[o,c,ki,kj],
/// dy[s,o,oh,ow], acc) from +0 over o ascending (conv_dgrad_tap's chain).
template <class S = SmallTile, class Sync>
DT_HD void conv_dgrad_taps_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                                       const float* dy, const float* w, float* taps_out,
                                       const Conv2dParams& p, int64_t s_lo, int64_t s_hi) {
    const int64_t P = p.ho * p.wo, cols = (s_hi - s_lo) * P, KK = p.kh * p.kw;
    const int64_t per_tap = tile_count<S>(p.ci, cols), tap = t.block / per_tap;
    // A(c, o) = w[o, c, tap], B(o, j) = dy[s_lo + j / P, o, j % P]
    tile_gemm_block<S>(t, shared, sync, tile_origin<S>(t.block % per_tap, cols), p.ci, cols, p.co,
                       StridedOperand{w + tap, KK, p.ci * KK}, DgradGradOut::of(dy, p, s_lo),
                       ZeroInit{}, plain_out([&](int64_t c, int64_t j, float acc) {
                           taps_out[(tap * p.ci + c) * cols + j] = acc;
                       }));
}

/// The transposed forward's operands with the taps in tap-major order (conv_dgrad_as_forward's
/// convolution, K = (ki', kj', o)): A = the flipped weights, B = dy padded.
DT_HD FlippedWeightOperand<TapOrder::kTapMajor> dgrad_tap_major_weight(const float* w,
                                                                       const Conv2dParams& p) {
    return FlippedWeightOperand<TapOrder::kTapMajor>::of(FlippedWeight{w, p.ci, p.kh}, p.co);
}
DT_HD PaddedInput<TapOrder::kTapMajor> dgrad_tap_major_input(const float* dy,
                                                             const Conv2dParams& p) {
    return PaddedInput<TapOrder::kTapMajor>::of(dy, conv_dgrad_as_forward(p));
}

/// dx element e of column j = (sample, ih, iw) of the transposed forward and channel c is
/// at + c * H * W (d: conv_dgrad_divisors(p, ...)); the column's ih and j.
struct DxColumn {
    int64_t at, ih, j;
};
DT_HD DxColumn conv_dx_column(const Conv2dParams& p, const DgradDivisors& d, int64_t j) {
    const common::QuotRem row = common::divide(j, d.w), plane = common::divide(row.q, d.h);
    return DxColumn{(plane.q * p.ci * p.h + plane.r) * p.w + row.r, plane.r, j};
}

/// Blocks of conv_dgrad_exact_cut_block and, per kernel row, of conv_dgrad_atomic_split_block:
/// tiles of the transposed forward's C (Ci x N*H*W).
template <class S = SmallTile>
DT_HD int64_t conv_dgrad_cut_tiles(const Conv2dParams& p) {
    return tile_count<S>(p.ci, p.n * p.h * p.w);
}

/// Shared floats of conv_dgrad_exact_cut_block's blocks: the tile program's panels, then a
/// double per output of the tile (its thread's running sum): the large tile's take 64 KiB, so
/// its blocks need dynamic shared memory beyond the default 48 KiB and fit two a SM (76 KiB
/// each, as kCutMinBlocks holds them), the others' fit their shape's occupancy.
template <class S>
inline constexpr int kDgradCutShared = S::kShared + 2 * (S::kM * S::kN);

/// conv.dgrad's exact mode on a conv2d_dgrad_is_forward shape with p.co >= 1 (d:
/// conv_dgrad_divisors(p, ...)): block b of conv_dgrad_cut_tiles<S>(p) computes the transposed
/// forward's tile b with K in tap-major order, every chain cut after each tap's Co terms
/// (tile_gemm_cut_block), so an output's pieces are its per-tap values (conv_dgrad_tap's chain:
/// fma(w[o,c,ki,kj], dy[s,o,oh,ow], acc) from +0 over o ascending), and a tap whose output
/// position does not exist gives +0 (its dy operands are the padding's +0; NaN for a NaN or
/// infinite weight). Each thread adds each piece to its output's running double (in shared
/// memory) where Fast2Sum finds the addition exact (kernels/common/accum_exact_fold.h; a +0 piece
/// always is), so at the end the double is the exact sum of the element's live taps' values and
/// its conversion to float is exact_value's one rounding (accum_exact_short.h: +0 for a zero sum).
/// An output one of whose additions was not exact (values more than about 29 binades apart, an
/// infinity, a NaN) is computed again as the per-element exact sum (conv_dgrad_sum over
/// DgradTapChain). So dx gets the exact mode's bits (kernels/conv2d.h) without a buffer.
/// ORDER: each piece's chain as above; the sum: none (exact).
template <class S = SmallTile, class Sync>
DT_HD void conv_dgrad_exact_cut_block(const common::GridPos& t, float* shared, const Sync& sync,
                                      const float* dy, const float* w, float* dx,
                                      const Conv2dParams& p, const DgradDivisors& d) {
    constexpr int kSlots = S::kTM * S::kTN, kT = static_cast<int>(S::kThreads);
    using Mask = SlotMask<S>;
    const int64_t cols = p.n * p.h * p.w, HW = p.h * p.w;
    const TileOrigin o = tile_origin<S>(t.block, cols);
    const int th = static_cast<int>(t.thread);
    // Slot q of this thread (tile_cell's) keeps its running double at part[q * kT]: only this
    // thread touches it (no barrier), a warp's in a row.
    double* const part = reinterpret_cast<double*>(shared + S::kShared) + th;
    DT_UNROLL
    for (int q = 0; q < kSlots; ++q) part[q * kT] = 0.0;
    Mask redo = 0;  // slots whose sum is computed again
    const auto piece = [&](int q, int64_t, int64_t, float value, bool) {
        double& sum = part[q * kT];
        const double b = static_cast<double>(value), s = sum + b;
        if (common::exact_double_sum_is_exact(sum, b, s))
            sum = s;
        else
            redo |= Mask{1} << q;
    };
    const auto done = [&](bool last) {
        if (!last) return;
        for (int q = 0; q < kSlots; ++q) {
            const TileCell cell = tile_cell<S>(th, o, q);
            if (cell.i >= p.ci || cell.j >= cols) continue;
            const int64_t e = conv_dx_column(p, d, cell.j).at + cell.i * HW;
            dx[e] = ((redo >> q) & 1u) != 0u
                        ? conv_dgrad_sum(p, d, e, nullptr, DgradTapChain{dy, w, p})
                        : static_cast<float>(part[q * kT]);
        }
    };
    tile_gemm_cut_block<S>(t, shared, sync, o, p.ci, cols, p.kh * p.kw * p.co,
                           dgrad_tap_major_weight(w, p), dgrad_tap_major_input(dy, p), p.co, piece,
                           done);
}

/// conv.dgrad's atomic mode on a conv2d_dgrad_is_forward shape (dx zeroed first; d:
/// conv_dgrad_divisors(p, ...)): block b of p.kh * conv_dgrad_cut_tiles<S>(p) computes, for the
/// transposed forward's tile b % tiles, the chains over kernel row b / tiles's taps (tap-major:
/// the row's Kw taps x Co terms) and atomic-adds each into its dx element where the row has an
/// output row (oh) for it; a non-finite chain (which a NaN or infinite weight of a tap whose
/// output position does not exist may make) is replaced by the CPU's row partial
/// (conv_dgrad_row over DgradTapChain). No ORDER on purpose: the Kh blocks of an element race.
template <class S = SmallTile, class Sync>
DT_HD void conv_dgrad_atomic_split_block(const common::GridPos& t, float* shared, const Sync& sync,
                                         const float* dy, const float* w, float* dx,
                                         const Conv2dParams& p, const DgradDivisors& d) {
    const int64_t cols = p.n * p.h * p.w, HW = p.h * p.w, tiles = conv_dgrad_cut_tiles<S>(p);
    const int64_t row = t.block / tiles, len = p.kw * p.co;  // the transposed kernel's row
    const int64_t ki = p.kh - 1 - row;                       // w's kernel row
    using Mask = SlotMask<S>;
    Mask again = 0;  // this thread's outputs whose chain was not finite
    const int th = static_cast<int>(t.thread);
    const TileOrigin o = tile_origin<S>(t.block % tiles, cols);
    const TileCell first = tile_cell<S>(th, o, 0);
    const auto put = [&](int64_t c, const DxColumn& col, float acc) {
        const int64_t oh = col.ih + p.pad - ki;
        if (oh < 0 || oh >= p.ho) return;  // no output row: nothing to add
        if ((common::float_to_bits(acc) & 0x7f800000u) != 0x7f800000u)
            common::atomic_add_float(dx + col.at + c * HW, acc);
        else  // its slot: (channel - the thread's first row) * kTN + which of its columns j is
            again |= Mask{1} << ((c - first.i) * S::kTN + S::col_slot(static_cast<int>(col.j - o.j0)));
    };
    tile_gemm_block<S>(t, shared, sync, o, p.ci, cols, len,
                       from_term(dgrad_tap_major_weight(w, p), row * len),
                       from_term(dgrad_tap_major_input(dy, p), row * len), ZeroInit{},
                       columns_out([&](int64_t j) { return conv_dx_column(p, d, j); }, put));
    // The rare path, one copy of it: the CPU's row partial of each output whose chain was not
    // finite.
    DT_NO_UNROLL
    for (; again != 0u; again &= again - 1u) {
        const TileCell cell = tile_cell<S>(th, o, lowest_slot(again));
        const int64_t e = conv_dx_column(p, d, cell.j).at + cell.i * HW;
        float partial;
        if (conv_dgrad_row(p, d, e, ki, DgradTapChain{dy, w, p}, &partial))
            common::atomic_add_float(dx + e, partial);
    }
}

}  // namespace dt::kernels::cuda
