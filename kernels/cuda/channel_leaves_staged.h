// SPDX-License-Identifier: MIT
// The per-row leaves of channel_totals_bodies.h for long rows, as a block program (host-device;
// the host tests run it with real barriers, tests/support/block_runner.h). Why: a leaf is one
// chain over its row in index order (the recipe), so one thread adds a whole row; when that
// thread also loads its row, a warp's load touches 32 rows a row apart (32 cache lines) and
// then waits on them term after term, and a launch of N * C threads fills few SMs. Here a block
// of kStagedThreads threads owns kStagedRows consecutive rows and walks them in chunks of
// kStagedChunk positions: every thread evaluates terms, a warp 32 consecutive positions of one
// row (one line per load, 16 loads per thread issued together), into shared memory; then thread j
// (j < kStagedRows) folds row j's terms of the chunk in index order. The chain, the
// accumulator and the stores are fold_row_leaf's, as in channel_leaves_body: the same bits.
#pragma once
#include <cstdint>

#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/launch_shape.h"

namespace dt::kernels::cuda {

inline constexpr uint32_t kStagedThreads = 256;            // every launch of the program uses this
inline constexpr int64_t kStagedRows = 32;                 // rows per block: one warp folds them
inline constexpr int64_t kStagedChunk = 128;               // positions of a row per chunk
inline constexpr int64_t kStagedPitch = kStagedChunk + 1;  // odd: row j's reads hit bank j + p
/// Rows shorter than this are left to channel_leaves_body (a warp's rows then lie within a few
/// lines, and most of the staged program's loaders would idle).
inline constexpr int64_t kStagedMinLen = 32;
static_assert(kStagedThreads <= kMaxBlockThreads);
static_assert(kStagedRows * kStagedChunk % kStagedThreads == 0, "whole load rounds");
static_assert(kStagedRows <= kStagedThreads, "the folding threads are part of the block");
static_assert(kStagedThreads % kStagedChunk == 0, "a thread keeps its position in every round");

/// Shared floats of the program for S sums: one tile of kStagedRows x kStagedPitch per sum.
template <int S>
DT_HD constexpr int staged_shared_floats() {
    return static_cast<int>(S * kStagedRows * kStagedPitch);
}

/// Whether the launcher runs q's leaves with the staged program (when its way allows it).
DT_HD bool channel_leaves_staged(const ChannelTotals& q) { return q.len >= kStagedMinLen; }

/// Blocks of kStagedRows rows (the program strides over them, so any grid covers all).
DT_HD int64_t staged_row_blocks(const ChannelTotals& q) {
    return (q.N * q.C + kStagedRows - 1) / kStagedRows;
}

/// The launch's grid: a block per kStagedRows rows, up to kElementwiseMaxBlocks.
DT_HD uint32_t staged_grid(const ChannelTotals& q) {
    const int64_t b = staged_row_blocks(q);
    return static_cast<uint32_t>(b < 1 ? 1
                                       : (b > kElementwiseMaxBlocks ? kElementwiseMaxBlocks : b));
}

/// fold(i, v) with the terms v[0..S) of row r0 + t.thread for i ascending, on the threads
/// t.thread < kStagedRows whose row exists; every thread of the block loads and meets the
/// barriers (two per chunk).
template <int S, class Term, class Sync, class Fold>
DT_HD void staged_row_terms(const common::GridPos& t, float* shared, const Sync& sync,
                            const Term& term, const ChannelTotals& q, int64_t r0, Fold&& fold) {
    const int64_t rows = q.N * q.C;
    const int64_t j = t.thread;
    const bool folds = j < kStagedRows && r0 + j < rows;
    // Element k * kStagedThreads + t.thread of a chunk's tile: this thread's position p and its
    // rows first_row, first_row + kRowStep, ...
    constexpr int64_t kRounds = kStagedRows * kStagedChunk / kStagedThreads;
    constexpr int64_t kRowStep = kStagedThreads / kStagedChunk;
    const int64_t p = t.thread % kStagedChunk, first_row = t.thread / kStagedChunk;
    // The channel of row r0 + first_row; those of the next rows by steps (no division per term).
    const int64_t first_channel = (r0 + first_row) % q.C, channel_step = kRowStep % q.C;
    for (int64_t i0 = 0; i0 < q.len; i0 += kStagedChunk) {
        const int64_t n = q.len - i0 < kStagedChunk ? q.len - i0 : kStagedChunk;
        // Every thread loads all of its terms before it stores any (kRounds loads in flight);
        // past the rows or the chunk's end it reloads the last row or position, a valid read
        // whose tile cell no fold reads, instead of a predicate per load.
        const int64_t i = i0 + p < q.len ? i0 + p : q.len - 1;
        float v[kRounds][S];
        int64_t c = first_channel;  // of row r (of a clamped row: some channel, its read valid)
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int64_t k = 0; k < kRounds; ++k) {
            const int64_t r = r0 + first_row + k * kRowStep;
            term(r < rows ? r : rows - 1, c, i, v[k]);
            c += channel_step;
            if (c >= q.C) c -= q.C;
        }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int64_t k = 0; k < kRounds; ++k)
            for (int s = 0; s < S; ++s)
                shared[(s * kStagedRows + first_row + k * kRowStep) * kStagedPitch + p] = v[k][s];
        sync();  // the chunk's terms are in the tiles
        if (folds) {
            // ORDER: the row's terms in index order (unrolled so that the shared loads of
            // several terms overlap; the folds stay one chain)
#if defined(__CUDA_ARCH__)
#pragma unroll 8
#endif
            for (int64_t at = 0; at < n; ++at) {
                float w[S];
                for (int s = 0; s < S; ++s)
                    w[s] = shared[(s * kStagedRows + j) * kStagedPitch + at];
                fold(i0 + at, static_cast<const float*>(w));
            }
        }
        sync();  // folded: the next chunk may overwrite the tiles
    }
}

/// Thread t of a launch of kStagedThreads threads per block with staged_shared_floats<S>()
/// shared floats: the leaves of rows [b * kStagedRows, (b + 1) * kStagedRows) for blocks
/// b = t.block, t.block + t.blocks, ... into `out` (fold_row_leaf's layout and modes).
template <int S, class Term, class Sync>
DT_HD void channel_leaves_staged_block(const common::GridPos& t, float* shared, const Sync& sync,
                                       const Term& term, const ChannelTotals& q,
                                       const ChannelLeaves& out) {
    const int64_t blocks = staged_row_blocks(q);
    for (int64_t b = t.block; b < blocks; b += t.blocks) {  // the same trips for a whole block
        const int64_t r0 = b * kStagedRows, r = r0 + t.thread;
        const bool store = t.thread < kStagedRows && r < q.N * q.C;
        fold_row_leaf<S>(q, r, store, out, [&](auto&& fold) {
            staged_row_terms<S>(t, shared, sync, term, q, r0, fold);
        });
    }
}

}  // namespace dt::kernels::cuda
