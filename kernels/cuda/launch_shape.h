// SPDX-License-Identifier: MIT
// The launch shape of the CUDA kernels that stride over their elements (every kernel but the
// tiled block programs): kElementwiseThreads per block, enough blocks for one element per thread
// up to a cap (the bodies stride over the grid, so any grid covers all). No CUDA headers: the
// host-grid tests use the same shape (tests/kernels/cuda/*_bodies_test.cpp).
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels::cuda {

/// The most threads any launch of the backend gives a block (static_asserts where each block
/// size is set). With it no launch can fail for its registers: a thread has at most 255, a
/// warp's are allocated in units of 256, so a block of 256 threads takes at most 8 warps x 8192
/// = 65536, the registers a block may have on every GPU since Volta (sm_70). (Static shared
/// memory past 48 KiB fails at compile time; dynamic shared memory is checked when emulated.)
inline constexpr uint32_t kMaxBlockThreads = 256;

/// The GEMM-shaped block programs' automatic tile choice (TileChoice::kAuto, runtime.h) takes
/// TinyTile for a GEMM where SmallTile makes fewer blocks than the device has SMs (most SMs
/// would idle, and most of each small tile's outputs lie outside C), LargeTile where it makes
/// a full wave of its blocks (kLargeWave per SM: its occupancy, LargeTile::kMinBlocks), else
/// SmallTile; this many SMs (an H100 SXM's) where the count is not known.
inline constexpr int64_t kFewTileBlocks = 132;
inline constexpr int64_t kLargeWave = 3;
DT_HD bool tiny_tile_for(int64_t small_tile_blocks, int multiprocessors) {
    return small_tile_blocks < (multiprocessors > 0 ? multiprocessors : kFewTileBlocks);
}
/// Why the large tile where it fills the GPU: per fma a thread of SmallTile reads 1/8 of an
/// operand from shared memory (two 4-wide loads per 16 fma), of LargeTile 1/16 (four per 64): at
/// the SM's 128 bytes of shared-memory reads per clock the small tile's fma's can issue at
/// half their rate at most, the large tile's at the full rate; and each of its chunks loads half
/// the operands per fma from global memory. But not where its tiles would compute a quarter more
/// outputs outside C than the small tiles (a C of 16 rows: SmallCNN's conv1): a large tile
/// computes 4 small tiles' outputs, so that is 4 large_tile_blocks > 1.25 small_tile_blocks.
DT_HD bool large_tile_for(int64_t large_tile_blocks, int64_t small_tile_blocks,
                          int multiprocessors) {
    const int64_t sms = multiprocessors > 0 ? multiprocessors : kFewTileBlocks;
    return large_tile_blocks >= kLargeWave * sms && 16 * large_tile_blocks <= 5 * small_tile_blocks;
}

/// Samples per block of conv.wgrad's programs that run a group of samples' per-sample chains,
/// cut at every sample's end: the largest power of two up to `most` that still makes
/// kWgradGroupWaves waves of blocks (`tiles` blocks per group; a wave is `blocks_per_sm`, the
/// program's occupancy, kCutMinBlocks, on every SM), so that a last partial wave costs a quarter
/// at most (one wave and a few blocks more takes two rounds: ResNet-18's layer1 at batch 128
/// made 576 small-tile blocks for an H100's 528 places with groups of 4).
inline constexpr int64_t kWgradGroupWaves = 4;
DT_HD int64_t wgrad_sample_group(int64_t samples, int64_t tiles, int64_t most, int multiprocessors,
                                 int blocks_per_sm) {
    const int64_t want =
        kWgradGroupWaves * blocks_per_sm * (multiprocessors > 0 ? multiprocessors : kFewTileBlocks);
    int64_t g = most;
    while (g > 1 && (samples + g - 1) / g * tiles < want) g /= 2;
    return g;
}
/// The exact mode with limb atomics (conv_wgrad_exact_fold_block): a block folds its group's
/// leaves before its atomics, so larger groups make fewer atomics (mostly one move of about
/// three per output and group: ResNet-18's layer4 at batch 128 makes two groups of the small
/// tile, four of the large, where the float atomics of the atomic mode's groups of 16 make
/// eight adds): up to 64 samples.
inline constexpr int64_t kWgradFoldMaxGroup = 64;
DT_HD int64_t wgrad_fold_group(int64_t samples, int64_t tiles, int multiprocessors,
                               int blocks_per_sm) {
    return wgrad_sample_group(samples, tiles, kWgradFoldMaxGroup, multiprocessors, blocks_per_sm);
}
/// The per-sample leaves (conv_wgrad_sample_leaves_block): a block's set-up (its operands' lines
/// and positions, divisions included) and its first fetch are shared by its samples, so enough
/// of them for kWgradLeafBlockTerms terms a block (ResNet-18's layer4, 16 positions: 16 samples;
/// layer3, 64: 4; layer2 and layer1, 256 and 1024: one, the plain chains as before), up to 64.
inline constexpr int64_t kWgradLeafBlockTerms = 256;
DT_HD int64_t wgrad_leaf_block_samples(int64_t samples, int64_t positions, int64_t tiles,
                                       int multiprocessors, int blocks_per_sm) {
    int64_t most = 1;
    while (most < kWgradFoldMaxGroup && most * positions < kWgradLeafBlockTerms) most *= 2;
    return wgrad_sample_group(samples, tiles, most, multiprocessors, blocks_per_sm);
}

inline constexpr uint32_t kElementwiseThreads = 256;
static_assert(kElementwiseThreads <= kMaxBlockThreads);
inline constexpr uint32_t kElementwiseMaxBlocks = 65535;
DT_HD uint32_t elementwise_blocks(int64_t n) {
    const int64_t b = (n + kElementwiseThreads - 1) / kElementwiseThreads;
    return static_cast<uint32_t>(b < 1 ? 1
                                       : (b > kElementwiseMaxBlocks ? kElementwiseMaxBlocks : b));
}

}  // namespace dt::kernels::cuda
