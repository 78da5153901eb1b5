// SPDX-License-Identifier: MIT
// The register-tiled block program under every GEMM-shaped CUDA kernel (the GEMM, the
// convolution forward, conv.dgrad's per-tap values, conv.wgrad's leaves): a block of
// S::kThreads threads owns an S::kM x S::kN tile of C = A . B (S: a TileShape); for every chunk
// of S::kK k's it loads the chunk's A and B panels and a live flag per k into shared memory,
// waits at a barrier, then each thread continues the chains of its S::kTM x S::kTN outputs (the
// next chunk fetched from global memory meanwhile, and put into the other half of the shared
// memory: one barrier per chunk). A chunk whose kK terms are all live runs them as one
// unrolled sequence (constant panel offsets, no test or branch per term), another term by term.
// tile_gemm_cut_block cuts every output's chain every `length` k's into pieces that each start
// from +0 (conv.wgrad's per-sample chains of a group of samples, folded per output as they end).
// The operands are read through tile_operands.h: each thread loads the same rows of A and the
// same column of B in every chunk, so it works out where they are once and only moves its k
// positions on from chunk to chunk.
// ORDER: every output's chain is acc = init, then acc = fma(A(i, k), B(k, j), acc) for the live
// k ascending, one fma per term, never split, so the bits are those of the per-output chain of
// the CPU recipe whatever the tile shape; the shape only changes where operands come from and
// how many outputs a thread keeps in registers (SmallTile: 16 per thread, two 4-wide shared
// loads per 16 fma; LargeTile: 64 per thread, four per 64 fma and half the panel loads per fma;
// TinyTile: 2 per thread, for GEMMs of few outputs). Which shape is faster for which GEMM is for
// a GPU to say (dt_gpu_kernel_bench's tile comparisons); the launchers take the shape
// with_tile_shape (kernels/cuda/launch.cuh) picks.
// Written once for host and device: `sync` is __syncthreads on the GPU and a std::barrier of
// the block's threads in the host tests (tests/support/block_runner.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"
#include "kernels/cuda/launch_shape.h"
#include "kernels/cuda/tile_operands.h"

namespace dt::kernels::cuda {

/// A tile of C of kM x kN outputs, kTM x kTN per thread, kK k's per shared-memory chunk.
/// Panel loads: thread t loads term t % kK of kASlots rows of A (t / kK, then every
/// kThreads / kK rows) and column t % kN of B at kBSlots consecutive terms from
/// (t / kN) * kBSlots.
/// Thread (ty, tx) owns rows ty * kTM + r (r < kTM) and columns b_col(tx, c) (c < kTN) of the
/// tile: its kTN columns in groups of kBVec adjacent ones, group g at g * kCols * kBVec. A term's
/// B operands of a group are one vector load from shared memory (kBVec floats, at most 16
/// bytes), and a quarter warp's loads of a group then cover 32 different banks: one group of kTN
/// columns would put the threads kTN floats apart, two threads to a bank when kTN is 8 (a 2-way
/// conflict on every B load). tests/kernels/cuda/tile_banks_test.cpp checks every shape's loads.
template <int M, int N, int TM, int TN, int MinBlocks>
struct TileShape {
    static constexpr int kM = M, kN = N, kK = kTileK, kTM = TM, kTN = TN;
    /// Blocks an SM must hold at once (the kernels' __launch_bounds__): caps the registers per
    /// thread at 65536 / (kMinBlocks * kThreads), so that the unrolled chunk cannot make ptxas
    /// trade a block of occupancy for a few registers.
    static constexpr int kMinBlocks = MinBlocks;
    static constexpr int kRows = kM / kTM, kCols = kN / kTN;  // thread rows and columns
    static constexpr uint32_t kThreads = kRows * kCols;
    static constexpr int kASlots = kK * kM / static_cast<int>(kThreads);
    static constexpr int kBSlots = kK * kN / static_cast<int>(kThreads);
    /// Shared floats of one chunk's panels: A (kK x kM), B (kK x kN), the live flags (kK).
    static constexpr int kPanels = kK * (kM + kN) + kK;
    /// Shared floats of a block: two chunks' panels (one is filled while the other is read).
    static constexpr int kShared = 2 * kPanels;
    static_assert(kPanels % 4 == 0, "the second chunk's panels stay 16-byte aligned");
    static_assert(kM % kTM == 0 && kN % kTN == 0);
    static_assert(kThreads <= kMaxBlockThreads);
    static_assert(kThreads % kK == 0 && kThreads % kN == 0, "the panel loads' thread mapping");
    /// Floats of one shared-memory vector load of a thread's A rows and of a group of B columns.
    static constexpr int kAVec = kTM < 4 ? kTM : 4, kBVec = kTN < 4 ? kTN : 4;
    static_assert(kTN % kBVec == 0 && kTM % kAVec == 0);
    /// Row r of thread row ty, within the tile.
    static DT_HD constexpr int a_row(int ty, int r) { return ty * kTM + r; }
    /// Column c of thread column tx, within the tile.
    static DT_HD constexpr int b_col(int tx, int c) {
        return (c / kBVec) * (kCols * kBVec) + tx * kBVec + c % kBVec;
    }
    /// Which of its thread's columns (c of b_col) column jj of the tile is.
    static DT_HD constexpr int col_slot(int jj) {
        return jj / (kCols * kBVec) * kBVec + jj % kBVec;
    }
    static_assert((kK * kM) % kThreads == 0 && (kK * kN) % kThreads == 0);
};
using SmallTile = TileShape<32, 64, 4, 4, 4>;   // 128 threads of 16 outputs (the default)
using LargeTile = TileShape<64, 128, 8, 8, 3>;  // 128 threads of 64 outputs
/// 128 threads of 2 outputs, for GEMMs of few outputs and long chains (conv.wgrad of a first
/// layer: 16 x 9 outputs, chains of 16 samples x 784 positions, one block per sample group):
/// every chunk a block loads kK (kM + kN) operands and computes kM kN outputs, and where a
/// SmallTile's 32 x 64 outputs are mostly outside C, its loads and fma's are mostly spent on
/// nothing while the few blocks there are leave most SMs idle.
using TinyTile = TileShape<16, 16, 1, 2, 6>;

/// A launch's name with its tile shape: `names` in the order small, large, tiny (the launch
/// profile tells which shape ran).
template <class S>
constexpr const char* by_tile(const char* small, const char* large, const char* tiny) {
    return std::is_same_v<S, LargeTile> ? large : std::is_same_v<S, TinyTile> ? tiny : small;
}

/// Blocks a SM that a program with cut chains (tile_gemm_cut_block) holds with shape S (its
/// kernels' __launch_bounds__): the large tile's 64 outputs a thread with their cut state take
/// 219 (conv.dgrad's exact cut) to 250 registers (conv.wgrad's per-sample leaves), two blocks a
/// SM; held to three, ptxas spills (the leaves: 168 registers, 788 bytes reloaded). Two large
/// blocks of the exact programs also fill an H100's shared memory (their running doubles: 76 KiB
/// a block for conv.dgrad's cut, 108 KiB for conv.wgrad's fold, in dynamic shared memory).
template <class S>
inline constexpr int kCutMinBlocks = std::is_same_v<S, LargeTile> ? 2 : S::kMinBlocks;

/// Tiles of S covering an m x n C.
template <class S = SmallTile>
DT_HD int64_t tile_count(int64_t m, int64_t n) {
    return ((m + S::kM - 1) / S::kM) * ((n + S::kN - 1) / S::kN);
}

/// Where tile `tile` (row-major over the tiles of S of an m x n C) starts.
struct TileOrigin {
    int64_t i0, j0;
};
template <class S = SmallTile>
DT_HD TileOrigin tile_origin(int64_t tile, int64_t n) {
    const int64_t tiles_n = (n + S::kN - 1) / S::kN;
    return TileOrigin{(tile / tiles_n) * S::kM, (tile % tiles_n) * S::kN};
}

/// Chains start from +0.
struct ZeroInit {
    DT_HD float operator()(int64_t, int64_t) const { return 0.0f; }
};

/// Where the outputs go, column by column: where(j) once per column of a thread (an index
/// decomposition belongs here, not in put), then put(i, where(j), acc) per output.
template <class Where, class Put>
struct ColumnsOut {
    Where where;
    Put put;
};
template <class Where, class Put>
DT_HD ColumnsOut<Where, Put> columns_out(const Where& where, const Put& put) {
    return ColumnsOut<Where, Put>{where, put};
}
/// put(i, j, acc) for output (i, j).
template <class Put>
DT_HD auto plain_out(const Put& put) {
    return columns_out([](int64_t j) { return j; }, put);
}

/// Term kk of a chunk in thread (ty, tx)'s chains. ORDER: acc[r][c] = fma(A(i, k), B(k, j),
/// acc[r][c]), called for the chunk's live k ascending (tile_gemm_block).
template <class S>
DT_HD void fma_term(const float* as, const float* bs, int kk, int ty, int tx,
                    float (&acc)[S::kTM][S::kTN]) {
    float av[S::kTM], bv[S::kTN];
    DT_UNROLL
    for (int r = 0; r < S::kTM; ++r) av[r] = as[kk * S::kM + S::a_row(ty, r)];
    DT_UNROLL
    for (int c = 0; c < S::kTN; ++c) bv[c] = bs[kk * S::kN + S::b_col(tx, c)];
    DT_UNROLL
    for (int r = 0; r < S::kTM; ++r) {
        DT_UNROLL
        for (int c = 0; c < S::kTN; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
    }
}

/// Every output one chain over all of K (tile_gemm_block).
struct OneChain {
    static constexpr bool kCut = false;
};
/// Chains cut every `length` k's (length >= 1): an output's chain restarts from +0 at every
/// multiple of length; piece(slot, i, j, acc, last) receives each piece of each output (i, j)
/// of the thread inside C (slot = r * kTN + c: which of its thread's outputs it is, tile_cell;
/// last: the piece that ends at K), then done(last) is called once per cut, after its pieces.
template <class Piece, class Done>
struct CutChains {
    static constexpr bool kCut = true;
    int64_t length;
    Piece piece;
    Done done;
};

/// Output slot q (r * kTN + c) of thread th of the tile at o: its row i and column j of C.
struct TileCell {
    int64_t i, j;
};
/// A bit per output slot of a thread (slot masks of the programs that take some slots a rarer way).
template <class S>
using SlotMask = std::conditional_t<(S::kTM * S::kTN > 32), uint64_t, uint32_t>;
/// The lowest slot of a nonzero slot mask.
template <class Mask>
DT_HD int lowest_slot(Mask mask) {
    return common::trailing_ones64(~static_cast<uint64_t>(mask));
}
template <class S>
DT_HD TileCell tile_cell(int th, const TileOrigin& o, int q) {
    return TileCell{o.i0 + (th / S::kCols) * S::kTM + q / S::kTN,
                    o.j0 + S::b_col(th % S::kCols, q % S::kTN)};
}

/// The chains of thread (ty, tx)'s outputs in the C tile at `o` over K = k (the body of
/// tile_gemm_block and tile_gemm_cut_block): acc holds their starts and ends with their ends
/// (with cut chains: the last pieces'; the others went to cut.piece).
template <class S, class A, class B, class Cut, class Sync>
DT_HD void tile_gemm_chains(const common::GridPos& t, float* shared, const Sync& sync,
                            const TileOrigin& o, int64_t m, int64_t n, int64_t k, const A& a,
                            const B& b, const Cut& cut, float (&acc)[S::kTM][S::kTN]) {
    // The panels of chunk k0 / kK: in half (k0 / kK) % 2 of `shared`, at
    //   as[kk * S::kM + ii] = A(i0 + ii, k0 + kk), bs[kk * S::kN + jj] = B(k0 + kk, j0 + jj),
    //   flag[kk]: term k0 + kk is live.
    const auto as_of = [&](int half) { return shared + half * S::kPanels; };
    const auto bs_of = [&](int half) { return as_of(half) + S::kK * S::kM; };
    const auto flag_of = [&](int half) { return bs_of(half) + S::kK * S::kN; };
    const int th = static_cast<int>(t.thread);
    const int ty = th / S::kCols, tx = th % S::kCols;
    // What this thread loads (TileShape's mapping), worked out once: term a_kk of the A rows
    // a_ii + q * kARowStep, column b_jj of B at the terms b_kk + q.
    constexpr int kARowStep = static_cast<int>(S::kThreads) / S::kK;
    const int a_kk = th % S::kK, a_ii = th / S::kK;
    const int b_jj = th % S::kN, b_kk = th / S::kN * S::kBSlots;
    typename A::Line a_line[S::kASlots];
    DT_UNROLL
    for (int q = 0; q < S::kASlots; ++q) a_line[q] = a.line(o.i0 + a_ii + q * kARowStep);
    typename A::Pos a_pos = a.pos(a_kk);
    const typename B::Line b_line = b.line(o.j0 + b_jj);
    typename B::Pos b_pos = b.pos(b_kk);
    const bool b_col_in = o.j0 + b_jj < n;
    // fetch: a chunk's panel values from global memory into registers (outside C or K: +0),
    // with B's live flags (threads of B's first column); the next chunk's are fetched before
    // the fma's of the current one, so that their latency hides behind those.
    float a_val[S::kASlots], b_val[S::kBSlots];
    bool b_live[S::kBSlots];
    auto fetch = [&](int64_t k0) {
        const bool a_k_in = k0 + a_kk < k;
        DT_UNROLL
        for (int q = 0; q < S::kASlots; ++q) {
            const bool in = a_k_in && o.i0 + a_ii + q * kARowStep < m;
            a_val[q] = in ? a.at(a_line[q], a_pos) : 0.0f;
        }
        a.advance(a_pos);
        typename B::Pos at = b_pos;
        DT_UNROLL
        for (int q = 0; q < S::kBSlots; ++q) {
            const bool k_in = k0 + b_kk + q < k;
            b_val[q] = k_in && b_col_in ? b.at(b_line, at) : 0.0f;
            b_live[q] = b_jj == 0 && k_in && b.live(at);
            if (q + 1 < S::kBSlots) b.next(at);
        }
        b.advance(b_pos);
    };
    // A cut (chains cut every cut.length k's): the pieces ending at `next_cut` go to cut.piece
    // and the chains restart from +0. The same k for every thread, so the branches are uniform.
    int64_t next_cut = k;
    if constexpr (Cut::kCut) next_cut = cut.length;
    auto cut_here = [&]() {
        if constexpr (Cut::kCut) {
            DT_UNROLL
            for (int r = 0; r < S::kTM; ++r) {
                DT_UNROLL
                for (int c = 0; c < S::kTN; ++c) {
                    const TileCell cell = tile_cell<S>(th, o, r * S::kTN + c);
                    if (cell.i < m && cell.j < n)
                        cut.piece(r * S::kTN + c, cell.i, cell.j, acc[r][c], false);
                    acc[r][c] = 0.0f;
                }
            }
            cut.done(false);
            next_cut += cut.length;
        }
    };
    if (k > 0) fetch(0);
    int half = 0;
    for (int64_t k0 = 0; k0 < k; k0 += S::kK, half ^= 1) {
        // put: the fetched chunk into its half. No barrier is needed before: the last reads of
        // this half were the chunk before last's, and every thread has met the barrier after
        // the last chunk's put since then, which each met after its reads.
        float* as = as_of(half);
        float* bs = bs_of(half);
        float* flag = flag_of(half);
        DT_UNROLL
        for (int q = 0; q < S::kASlots; ++q) as[a_kk * S::kM + a_ii + q * kARowStep] = a_val[q];
        DT_UNROLL
        for (int q = 0; q < S::kBSlots; ++q) {
            bs[(b_kk + q) * S::kN + b_jj] = b_val[q];
            if (b_jj == 0) flag[b_kk + q] = b_live[q] ? 1.0f : 0.0f;
        }
        sync();
        if (k0 + S::kK < k) fetch(k0 + S::kK);
        const int kc = k - k0 < S::kK ? static_cast<int>(k - k0) : S::kK;
        // A whole chunk of live terms (the common case: dead taps and K's end are rare) takes
        // the same fma's with a constant trip count, which the GPU unrolls: the panel offsets
        // become constants, and no flag test, counter or branch per term is left.
        bool whole = kc == S::kK;
        DT_UNROLL
        for (int kk = 0; kk < S::kK; ++kk) whole = whole && flag[kk] != 0.0f;
        if constexpr (!Cut::kCut) {
            if (whole) {  // ORDER: the live k ascending, one fma per term (fma_term)
                DT_UNROLL
                for (int kk = 0; kk < S::kK; ++kk) fma_term<S>(as, bs, kk, ty, tx, acc);
            } else {
                for (int kk = 0; kk < kc; ++kk) {
                    if (flag[kk] != 0.0f) fma_term<S>(as, bs, kk, ty, tx, acc);
                }
            }
        } else {
            // The chunk's terms up to each cut inside it, then the cut: one place in the code
            // that cuts (its pieces' code is long), a whole chunk without a cut unrolled.
            DT_NO_UNROLL
            for (int kk = 0;;) {
                const int stop = next_cut < k0 + kc ? static_cast<int>(next_cut - k0) : kc;
                if (whole && kk == 0 && stop == S::kK) {  // ORDER: as above
                    DT_UNROLL
                    for (int q = 0; q < S::kK; ++q) fma_term<S>(as, bs, q, ty, tx, acc);
                } else {
                    DT_NO_UNROLL
                    for (; kk < stop; ++kk) {
                        if (flag[kk] != 0.0f) fma_term<S>(as, bs, kk, ty, tx, acc);
                    }
                }
                kk = stop;
                if (k0 + kk == next_cut && next_cut < k) cut_here();
                if (kk >= kc) break;
            }
        }
    }
    sync();  // the panels are read: the block may use its shared memory again
}

/// Thread t.thread's outputs of the C tile at `o` (C is m x n, K = k): a and b are the operands
/// (tile_operands.h; elements read for i < m, j < n, k < K only), b.live(k) whether term k is
/// in the chains, init(i, j) the chain's start; out (a ColumnsOut) receives each output of the
/// tile inside C.
template <class S, class A, class B, class Init, class Out, class Sync>
DT_HD void tile_gemm_block(const common::GridPos& t, float* shared, const Sync& sync,
                           const TileOrigin& o, int64_t m, int64_t n, int64_t k, const A& a,
                           const B& b, const Init& init, const Out& out) {
    // Thread (ty, tx) owns rows i0 + ty * kTM + r and columns j0 + b_col(tx, c): its operands of
    // a term are adjacent in the panels in groups of up to 4, so the GPU reads them with vector
    // loads (the panels are 16-byte aligned: kShared's users declare them so).
    const int th = static_cast<int>(t.thread);
    const int ty = th / S::kCols, tx = th % S::kCols;
    float acc[S::kTM][S::kTN];
    DT_UNROLL
    for (int r = 0; r < S::kTM; ++r) {
        DT_UNROLL
        for (int c = 0; c < S::kTN; ++c) {
            const int64_t i = o.i0 + ty * S::kTM + r, j = o.j0 + S::b_col(tx, c);
            acc[r][c] = i < m && j < n ? init(i, j) : 0.0f;
        }
    }
    tile_gemm_chains<S>(t, shared, sync, o, m, n, k, a, b, OneChain{}, acc);
    DT_UNROLL
    for (int c = 0; c < S::kTN; ++c) {
        const int64_t j = o.j0 + S::b_col(tx, c);
        if (j >= n) continue;
        const auto where = out.where(j);
        DT_UNROLL
        for (int r = 0; r < S::kTM; ++r) {
            const int64_t i = o.i0 + ty * S::kTM + r;
            if (i < m) out.put(i, where, acc[r][c]);
        }
    }
}

/// tile_gemm_block with every output's chain cut every `length` k's (length >= 1; the pieces'
/// chains start from +0): piece(slot, i, j, acc, last) receives every piece of each output
/// (i, j) of the tile inside C in k order, the last with last = true (none when K = 0), and
/// done(last) follows each cut's pieces (CutChains). ORDER: each piece's chain is acc =
/// fma(A(i, k), B(k, j), acc) from +0 over its live k ascending.
template <class S, class A, class B, class Piece, class Done, class Sync>
DT_HD void tile_gemm_cut_block(const common::GridPos& t, float* shared, const Sync& sync,
                               const TileOrigin& o, int64_t m, int64_t n, int64_t k, const A& a,
                               const B& b, int64_t length, const Piece& piece, const Done& done) {
    const int th = static_cast<int>(t.thread);
    float acc[S::kTM][S::kTN];
    DT_UNROLL
    for (int r = 0; r < S::kTM; ++r) {
        DT_UNROLL
        for (int c = 0; c < S::kTN; ++c) acc[r][c] = 0.0f;
    }
    tile_gemm_chains<S>(t, shared, sync, o, m, n, k, a, b,
                        CutChains<Piece, Done>{length, piece, done}, acc);
    if (k <= 0) return;
    DT_UNROLL
    for (int r = 0; r < S::kTM; ++r) {
        DT_UNROLL
        for (int c = 0; c < S::kTN; ++c) {
            const TileCell cell = tile_cell<S>(th, o, r * S::kTN + c);
            if (cell.i < m && cell.j < n) piece(r * S::kTN + c, cell.i, cell.j, acc[r][c], true);
        }
    }
    done(true);
}

}  // namespace dt::kernels::cuda
