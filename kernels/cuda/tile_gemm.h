// SPDX-License-Identifier: MIT
// The register-tiled block program under every GEMM-shaped CUDA kernel (the GEMM, the
// convolution forward, conv.dgrad's per-tap values, conv.wgrad's leaves): a block of
// kTileThreads threads owns a kTileM x kTileN tile of C = A . B; for every chunk of kTileK k's
// it loads the chunk's A and B panels and a live flag per k into shared memory, waits at a
// barrier, then each thread continues the chains of its kThreadM x kThreadN outputs, and waits
// again before the next load. ORDER: every output's chain is acc = init, then
// acc = fma(A(i, k), B(k, j), acc) for the live k ascending, one fma per term, never split, so
// the bits are those of the per-output chain of the CPU recipe whatever the tile sizes; the
// tiles only change where operands come from and how many outputs a thread keeps in registers
// (16 per thread: 8 shared loads per 16 fma instead of 2 per fma with one output per thread).
// Written once for host and device: `sync` is __syncthreads on the GPU and a std::barrier of
// the block's threads in the host tests (tests/support/block_runner.h).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dt::kernels::cuda {

inline constexpr int kTileM = 32, kTileN = 64, kTileK = 8;
inline constexpr int kThreadM = 4, kThreadN = 4;                 // outputs per thread
inline constexpr int kTileRows = kTileM / kThreadM;              // 8 thread rows
inline constexpr int kTileCols = kTileN / kThreadN;              // 16 thread columns
inline constexpr uint32_t kTileThreads = kTileRows * kTileCols;  // 128
/// Shared floats of a block: the A panel (kTileK x kTileM), the B panel (kTileK x kTileN) and
/// the chunk's live flags.
inline constexpr int kTileShared = kTileK * (kTileM + kTileN) + kTileK;

/// Tiles of kTileM x kTileN covering an m x n C.
DT_HD int64_t tile_count(int64_t m, int64_t n) {
    return ((m + kTileM - 1) / kTileM) * ((n + kTileN - 1) / kTileN);
}

/// Where tile `tile` (row-major over the tiles of an m x n C) starts.
struct TileOrigin {
    int64_t i0, j0;
};
DT_HD TileOrigin tile_origin(int64_t tile, int64_t n) {
    const int64_t tiles_n = (n + kTileN - 1) / kTileN;
    return TileOrigin{(tile / tiles_n) * kTileM, (tile % tiles_n) * kTileN};
}

/// Every k is live (the plain GEMM).
struct AllLive {
    DT_HD bool operator()(int64_t) const { return true; }
};
/// Chains start from +0.
struct ZeroInit {
    DT_HD float operator()(int64_t, int64_t) const { return 0.0f; }
};

/// Thread t.thread's outputs of the C tile at `o` (C is m x n, K = k): a(i, k) and b(k, j) give
/// the operands (called for i < m, j < n, k < K only), live(k) whether term k is in the chain,
/// init(i, j) the chain's start; out(i, j, acc) receives each output of the tile inside C.
template <class A, class B, class Live, class Init, class Out, class Sync>
DT_HD void tile_gemm_block(const common::GridPos& t, float* shared, const Sync& sync,
                           const TileOrigin& o, int64_t m, int64_t n, int64_t k, const A& a,
                           const B& b, const Live& live, const Init& init, const Out& out) {
    float* as = shared;                    // as[kk * kTileM + ii] = A(i0 + ii, k0 + kk)
    float* bs = shared + kTileK * kTileM;  // bs[kk * kTileN + jj] = B(k0 + kk, j0 + jj)
    float* flag = bs + kTileK * kTileN;    // flag[kk]: term k0 + kk is live
    const int ty = static_cast<int>(t.thread) / kTileCols,
              tx = static_cast<int>(t.thread) % kTileCols;
    // Thread (ty, tx) owns rows i0 + ty + kTileRows * r and columns j0 + tx + kTileCols * c.
    float acc[kThreadM][kThreadN];
    for (int r = 0; r < kThreadM; ++r)
        for (int c = 0; c < kThreadN; ++c) {
            const int64_t i = o.i0 + ty + kTileRows * r, j = o.j0 + tx + kTileCols * c;
            acc[r][c] = i < m && j < n ? init(i, j) : 0.0f;
        }
    for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
        // load: the panels' elements round-robin over the threads; outside C or K: +0
        for (int e = static_cast<int>(t.thread); e < kTileK * kTileM; e += kTileThreads) {
            const int kk = e % kTileK, ii = e / kTileK;
            const int64_t i = o.i0 + ii, kx = k0 + kk;
            as[kk * kTileM + ii] = i < m && kx < k ? a(i, kx) : 0.0f;
        }
        for (int e = static_cast<int>(t.thread); e < kTileK * kTileN; e += kTileThreads) {
            const int jj = e % kTileN, kk = e / kTileN;
            const int64_t j = o.j0 + jj, kx = k0 + kk;
            bs[kk * kTileN + jj] = j < n && kx < k ? b(kx, j) : 0.0f;
        }
        if (t.thread < static_cast<uint32_t>(kTileK)) {
            const int64_t kx = k0 + static_cast<int64_t>(t.thread);
            flag[t.thread] = kx < k && live(kx) ? 1.0f : 0.0f;
        }
        sync();
        const int kc = k - k0 < kTileK ? static_cast<int>(k - k0) : kTileK;
        for (int kk = 0; kk < kc; ++kk) {  // ORDER: the live k ascending, one fma per term
            if (flag[kk] == 0.0f) continue;
            float av[kThreadM], bv[kThreadN];
            for (int r = 0; r < kThreadM; ++r) av[r] = as[kk * kTileM + ty + kTileRows * r];
            for (int c = 0; c < kThreadN; ++c) bv[c] = bs[kk * kTileN + tx + kTileCols * c];
            for (int r = 0; r < kThreadM; ++r)
                for (int c = 0; c < kThreadN; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
        }
        sync();
    }
    for (int r = 0; r < kThreadM; ++r)
        for (int c = 0; c < kThreadN; ++c) {
            const int64_t i = o.i0 + ty + kTileRows * r, j = o.j0 + tx + kTileCols * c;
            if (i < m && j < n) out(i, j, acc[r][c]);
        }
}

}  // namespace dt::kernels::cuda
