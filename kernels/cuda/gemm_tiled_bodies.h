// SPDX-License-Identifier: MIT
// The tiled GEMM of the CUDA backend as a block program (kernels/cuda/linear.cu launches it):
// the register-tiled program of tile_gemm.h over C (m, n) = op(A) . op(B), with the chains of
// gemm_f32_k_fma (kernels/gemm.h): acc = +0 (or C), then acc = fma(a, b, acc) for k ascending,
// never split, so the bits are the CPU's; the tiles only change where the operands come from.
// Host tests run every thread of a block as its own thread with real barriers
// (tests/support/block_runner.h).
#pragma once
#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/cuda/tile_gemm.h"
#include "kernels/gemm.h"

namespace dt::kernels::cuda {

/// Blocks of a tiled GEMM of C (m, n): row-major over tiles of S.
template <class S = SmallTile>
DT_HD int64_t gemm_tiles(const GemmParams& p) {
    return tile_count<S>(p.m, p.n);
}

/// Thread t of block t.block (of gemm_tiles<S>(p) blocks of S::kThreads threads, S::kShared
/// shared floats).
template <class S = SmallTile, class Sync>
DT_HD void gemm_tiled_block(const common::GridPos& t, float* shared, const Sync& sync,
                            const float* a, const float* b, float* c, const GemmParams& p) {
    const int64_t lda = p.lda ? p.lda : (p.trans_a ? p.m : p.k);
    const int64_t ldb = p.ldb ? p.ldb : (p.trans_b ? p.k : p.n);
    const int64_t ldc = p.ldc ? p.ldc : p.n;
    // A(i, k) and B(k, j) through their strides in either layout.
    const StridedOperand av{a, p.trans_a ? 1 : lda, p.trans_a ? lda : 1};
    const StridedOperand bv{b, p.trans_b ? ldb : 1, p.trans_b ? 1 : ldb};
    tile_gemm_block<S>(
        t, shared, sync, tile_origin<S>(t.block, p.n), p.m, p.n, p.k, av, bv,
        [&](int64_t i, int64_t j) { return p.accumulate ? c[i * ldc + j] : 0.0f; },
        plain_out([&](int64_t i, int64_t j, float acc) { c[i * ldc + j] = acc; }));
}

}  // namespace dt::kernels::cuda
