// SPDX-License-Identifier: MIT
// The combine of channel_totals_bodies.h in the tree and kahan modes as a block program
// (host-device; the host tests run it with real barriers, tests/support/block_runner.h). Why:
// one thread per (sum, channel) walking its N sample leaves loads them a block of 8 at a time,
// each block after the last one's additions, so a combine costs N / 8 memory latencies on a few
// dozen threads (batch norm: three per layer, on the step's critical path). Here a block of
// kCombineThreads threads owns kCombineChannels channels of one sum: thread (part w, lane l)
// combines the leaves of part w of channel c0 + l, all its loads issued together, and the parts
// are then combined through shared memory, level by level.
//
// ORDER: the same tree T (kernels/common/reduce_tree.h) over the same leaves. T is left-complete,
// so for any power of two B, T(p[0..n)) = T(b[0..m)) with b[j] = T(p[jB..min(jB + B, n))) and
// m = ceil(n / B) (every split of T at or above size B falls on a multiple of B; the blocks of 8
// of tree_sum_push_8 are the case B = 8). Part w of a channel is b[w] with B the least power of
// two that makes m <= kCombineParts; then T(b[0..m)) is taken as pairs: b[w] = b[w] + b[w + 1]
// for even w, then b[w] = b[w] + b[w + 2] for w divisible by 4, ..., each where w + step < m
// (T's definition once more, with B = 2 at each level). Kahan: the same tree with kahan_merge.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/channel_totals_bodies.h"
#include "kernels/cuda/launch_shape.h"

namespace dt::kernels::cuda {

inline constexpr uint32_t kCombineThreads = 256;  // every launch of the program uses this
static_assert(kCombineThreads <= kMaxBlockThreads);
/// Channels per block; a warp is 4 parts x 8 channels, so a load of a warp reads four lines of
/// 8 consecutive leaves (leaves of one sample are contiguous over the channels).
inline constexpr int64_t kCombineChannels = 8;
inline constexpr int64_t kCombineParts = kCombineThreads / kCombineChannels;  // 32
/// Shared floats of the program: a KahanSum (two floats) per thread.
inline constexpr int kCombineSharedFloats = 2 * static_cast<int>(kCombineThreads);

/// Whether the launcher combines q's leaves with this program (when its way allows it).
DT_HD bool channel_combine_in_blocks(const ChannelTotals& q) {
    return q.accum.mode == common::AccumMode::kTree || q.accum.mode == common::AccumMode::kKahan;
}

/// Blocks of the program for S sums: one per sum and kCombineChannels channels.
DT_HD int64_t combine_blocks(int S, const ChannelTotals& q) {
    return S * ((q.C + kCombineChannels - 1) / kCombineChannels);
}

/// The launch's grid (the program strides over its blocks, so any grid covers all).
DT_HD uint32_t combine_grid(int S, const ChannelTotals& q) {
    const int64_t b = combine_blocks(S, q);
    return static_cast<uint32_t>(b < 1 ? 1
                                       : (b > kElementwiseMaxBlocks ? kElementwiseMaxBlocks : b));
}

/// Leaves per part: the least power of two B with ceil(N / B) <= kCombineParts.
DT_HD int64_t combine_part_leaves(int64_t N) {
    int64_t b = 1;
    while (b * kCombineParts < N) b *= 2;
    return b;
}

/// T of the leaves n in [lo, hi) of channel c (at leaves[base + (n - lo) * C]); a part of at
/// most 8 leaves in registers (all its loads issued together), a longer one by tree_sum_of
/// (loads a block of 8 at a time). +0 for an empty part.
template <class Leaf>
DT_HD Leaf combine_part(const Leaf* leaves, int64_t base, int64_t n, int64_t C,
                        int64_t part_leaves) {
    if (part_leaves <= 8) {
        Leaf v[8];
        for (int k = 0; k < 8; ++k) v[k] = k < n ? leaves[base + k * C] : Leaf{};
        if constexpr (std::is_same_v<Leaf, float>) {
            return common::tree_of_at_most_8(v, static_cast<int>(n));  // ORDER: T
        } else {
            return common::kahan_tree_of_at_most_8(v, static_cast<int>(n));  // ORDER: T_k
        }
    }
    const auto leaf = [&](int64_t i) { return leaves[base + i * C]; };
    if constexpr (std::is_same_v<Leaf, float>) {
        return common::tree_sum_of(n, leaf);  // ORDER: T
    } else {
        return common::kahan_tree_sum_of(n, leaf);  // ORDER: T_k
    }
}

/// Thread t of a launch of kCombineThreads threads per block with kCombineSharedFloats shared
/// floats: out.sum[s][c] (finished: finish_total) for the (sum, channel blocks) b = t.block,
/// t.block + t.blocks, ...,
/// from the leaves (tree: leaves, kahan: kleaves; layout of channel_totals_bodies.h).
template <class Sync>
DT_HD void channel_combine_block(const common::GridPos& t, float* shared, const Sync& sync, int S,
                                 const ChannelTotals& q, const float* leaves,
                                 const common::KahanSum* kleaves, const ChannelSums& out) {
    const bool kahan = q.accum.mode == common::AccumMode::kKahan;
    const int64_t rows = q.N * q.C, per_sum = (q.C + kCombineChannels - 1) / kCombineChannels;
    const int64_t part_leaves = combine_part_leaves(q.N);
    const int64_t parts = (q.N + part_leaves - 1) / part_leaves;  // m <= kCombineParts
    const int64_t w = t.thread / kCombineChannels, lane = t.thread % kCombineChannels;
    const int64_t me = w * kCombineChannels + lane;
    float* sum = shared;                                         // part w of lane's channel at [me]
    float* comp = shared + kCombineThreads;                      // kahan's compensations, alike
    for (int64_t b = t.block; b < S * per_sum; b += t.blocks) {  // the same trips for a block
        const int64_t s = b / per_sum, c = (b % per_sum) * kCombineChannels + lane;
        const bool live = c < q.C;
        const int64_t lo = w * part_leaves < q.N ? w * part_leaves : q.N;
        const int64_t n = live ? (q.N - lo < part_leaves ? q.N - lo : part_leaves) : 0;
        const int64_t base = s * rows + lo * q.C + c;
        if (kahan) {
            const common::KahanSum k = combine_part(kleaves, base, n, q.C, part_leaves);
            sum[me] = k.sum;
            comp[me] = k.comp;
        } else {
            sum[me] = combine_part(leaves, base, n, q.C, part_leaves);
        }
        sync();  // every part's value is in shared memory
        // ORDER: T over the parts, pairs of pairs (the blocks of reduce_tree.h once more): part
        // w + step into part w, the left operand. `parts` is the same on every thread.
        for (int64_t step = 1; step < parts; step *= 2) {
            if (live && w % (2 * step) == 0 && w + step < parts) {
                const int64_t right = me + step * kCombineChannels;
                if (kahan) {
                    common::KahanSum k{sum[me], comp[me]};
                    common::kahan_merge(k, common::KahanSum{sum[right], comp[right]});
                    sum[me] = k.sum;
                    comp[me] = k.comp;
                } else {
                    sum[me] = sum[me] + sum[right];
                }
            }
            sync();  // this level's sums are in place (and read: the next block may write)
        }
        if (live && w == 0)
            out.sum[s][c] = finish_total(
                out.finish, c,
                kahan ? common::kahan_value(common::KahanSum{sum[me], comp[me]}) : sum[me]);
        // The next trip writes a thread's own cells only, and every read of another thread's
        // cell came before the last barrier; part 0's cells are read by their own thread.
    }
}

}  // namespace dt::kernels::cuda
