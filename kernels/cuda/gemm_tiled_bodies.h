// SPDX-License-Identifier: MIT
// The tiled GEMM of the CUDA backend as a block program (kernels/cuda/linear.cu launches it):
// a block of kGemmTile x kGemmTile threads owns a kGemmTile x kGemmTile tile of C; for every
// chunk of kGemmTile k's it loads the A and B tiles into shared memory, waits at a barrier,
// then each thread continues its element's chain over the chunk, and waits again before the next
// load. The chain is gemm_f32_k_fma's (kernels/gemm.h): acc = +0 (or C), then acc = fma(a, b,
// acc) for k ascending, never split, so the bits are the CPU's; the tiles only change where the
// operands come from. The program is written once for host and device: `sync` is __syncthreads
// on the GPU and a std::barrier of the block's threads in the host tests
// (tests/support/block_runner.h), which run every thread of the block as its own thread.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/gemm.h"

namespace dt::kernels::cuda {

inline constexpr int kGemmTile = 16;
inline constexpr uint32_t kGemmTileThreads = kGemmTile * kGemmTile;

/// Blocks of a tiled GEMM of C (m, n): row-major over tiles.
DT_HD int64_t gemm_tiles(const GemmParams& p) {
    return ((p.m + kGemmTile - 1) / kGemmTile) * ((p.n + kGemmTile - 1) / kGemmTile);
}

/// Shared floats a block uses: the A and B tiles.
inline constexpr int kGemmTiledShared = 2 * kGemmTile * kGemmTile;

/// Thread t of block t.block (of gemm_tiles(p) blocks of kGemmTileThreads threads).
template <class Sync>
DT_HD void gemm_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                            const float* a, const float* b, float* c, const GemmParams& p) {
    const int64_t lda = p.lda ? p.lda : (p.trans_a ? p.m : p.k);
    const int64_t ldb = p.ldb ? p.ldb : (p.trans_b ? p.k : p.n);
    const int64_t ldc = p.ldc ? p.ldc : p.n;
    const int64_t tiles_n = (p.n + kGemmTile - 1) / kGemmTile;
    const int64_t i0 = (t.block / tiles_n) * kGemmTile, j0 = (t.block % tiles_n) * kGemmTile;
    const int ty = static_cast<int>(t.thread / kGemmTile),
              tx = static_cast<int>(t.thread % kGemmTile);
    float* as = shared;                          // as[ty][kk] = A(i0 + ty, k0 + kk)
    float* bs = shared + kGemmTile * kGemmTile;  // bs[kk][tx] = B(k0 + kk, j0 + tx)
    const int64_t i = i0 + ty, j = j0 + tx;
    const bool mine = i < p.m && j < p.n;
    float acc = mine && p.accumulate ? c[i * ldc + j] : 0.0f;
    for (int64_t k0 = 0; k0 < p.k; k0 += kGemmTile) {
        // load: thread (ty, tx) brings A(i0 + ty, k0 + tx) and B(k0 + ty, j0 + tx); outside: 0
        const int64_t ka = k0 + tx, kb = k0 + ty;
        as[ty * kGemmTile + tx] =
            i < p.m && ka < p.k ? (p.trans_a ? a[ka * lda + i] : a[i * lda + ka]) : 0.0f;
        bs[ty * kGemmTile + tx] =
            kb < p.k && j < p.n ? (p.trans_b ? b[j * ldb + kb] : b[kb * ldb + j]) : 0.0f;
        sync();
        const int64_t kc = p.k - k0 < kGemmTile ? p.k - k0 : kGemmTile;
        for (int64_t kk = 0; kk < kc; ++kk)  // ORDER: k ascending, one fma per term
            acc = fmaf(as[ty * kGemmTile + kk], bs[kk * kGemmTile + tx], acc);
        sync();
    }
    if (mine) c[i * ldc + j] = acc;
}

}  // namespace dt::kernels::cuda
