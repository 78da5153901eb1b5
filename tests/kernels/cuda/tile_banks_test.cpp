// SPDX-License-Identifier: MIT
// The shared-memory loads of the tiled block program (kernels/cuda/tile_gemm.h, fma_term) mapped
// lane by lane onto the 32 banks of an NVIDIA GPU's shared memory, for every tile shape: no load
// of a warp meets a bank conflict. The model is the hardware's: 32 banks of 4 bytes; a warp's
// vector load of V floats is served in phases of 32 / V lanes; lanes reading the same word share
// it (broadcast), and two different words in one bank within a phase are a conflict. The
// addresses come from the shapes' own a_row and b_col, so a change of the thread mapping that
// brings a conflict back fails here, without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/tile_gemm.h"

namespace dt::kernels::cuda {
namespace {

constexpr int kBanks = 32, kWarp = 32;

/// The most different words one bank serves in one phase of a warp's load, where lane l reads
/// `vec` floats from word start[l] on.
int conflict_degree(const std::vector<int>& start, int vec) {
    const int phase_lanes = kWarp / vec;
    int worst = 1;
    for (int p0 = 0; p0 < kWarp; p0 += phase_lanes) {
        std::map<int, std::set<int>> words_of_bank;
        for (int l = p0; l < p0 + phase_lanes; ++l)
            for (int v = 0; v < vec; ++v) words_of_bank[(start[l] + v) % kBanks].insert(start[l] + v);
        for (const auto& [bank, words] : words_of_bank)
            worst = std::max(worst, static_cast<int>(words.size()));
    }
    return worst;
}

/// Every vector load of fma_term for term kk of every warp of shape S: the A rows of a thread in
/// groups of kAVec, its B columns in groups of kBVec; each group adjacent and aligned to its
/// width (or the GPU could not load it as one vector). Returns the worst conflict degree.
template <class S>
int worst_load_conflict(const char* name) {
    int worst = 1;
    for (int kk = 0; kk < S::kK; ++kk) {
        for (int w = 0; w < static_cast<int>(S::kThreads) / kWarp; ++w) {
            for (int g = 0; g < S::kTM / S::kAVec; ++g) {  // A: as[kk * kM + a_row(ty, r)]
                std::vector<int> start(kWarp);
                for (int l = 0; l < kWarp; ++l) {
                    const int ty = (w * kWarp + l) / S::kCols;
                    start[l] = kk * S::kM + S::a_row(ty, g * S::kAVec);
                    for (int v = 1; v < S::kAVec; ++v)
                        EXPECT_EQ(S::a_row(ty, g * S::kAVec + v), S::a_row(ty, g * S::kAVec) + v);
                    EXPECT_EQ(start[l] % S::kAVec, 0) << name << ": an A group not aligned";
                }
                const int d = conflict_degree(start, S::kAVec);
                EXPECT_EQ(d, 1) << name << ": A rows group " << g << ", warp " << w;
                worst = std::max(worst, d);
            }
            for (int g = 0; g < S::kTN / S::kBVec; ++g) {  // B: bs[kk * kN + b_col(tx, c)]
                std::vector<int> start(kWarp);
                for (int l = 0; l < kWarp; ++l) {
                    const int tx = (w * kWarp + l) % S::kCols;
                    start[l] = kk * S::kN + S::b_col(tx, g * S::kBVec);
                    for (int v = 1; v < S::kBVec; ++v)
                        EXPECT_EQ(S::b_col(tx, g * S::kBVec + v), S::b_col(tx, g * S::kBVec) + v);
                    EXPECT_EQ(start[l] % S::kBVec, 0) << name << ": a B group not aligned";
                }
                const int d = conflict_degree(start, S::kBVec);
                EXPECT_EQ(d, 1) << name << ": B columns group " << g << ", warp " << w;
                worst = std::max(worst, d);
            }
        }
    }
    return worst;
}

/// b_col and col_slot are each other's inverse, and a thread row's columns cover the tile's
/// columns once.
template <class S>
void expect_columns_partition_the_tile() {
    std::vector<int> owner(S::kN, -1);
    for (int tx = 0; tx < S::kCols; ++tx) {
        for (int c = 0; c < S::kTN; ++c) {
            const int jj = S::b_col(tx, c);
            ASSERT_GE(jj, 0);
            ASSERT_LT(jj, S::kN);
            EXPECT_EQ(owner[jj], -1) << "column " << jj << " owned twice";
            owner[jj] = tx;
            EXPECT_EQ(S::col_slot(jj), c);
        }
    }
}

TEST(CudaTileBanks, EveryShapesSharedLoadsAreConflictFree) {
    EXPECT_EQ(worst_load_conflict<SmallTile>("SmallTile"), 1);
    EXPECT_EQ(worst_load_conflict<LargeTile>("LargeTile"), 1);
    EXPECT_EQ(worst_load_conflict<TinyTile>("TinyTile"), 1);
}

TEST(CudaTileBanks, ThreadColumnsPartitionTheTile) {
    expect_columns_partition_the_tile<SmallTile>();
    expect_columns_partition_the_tile<LargeTile>();
    expect_columns_partition_the_tile<TinyTile>();
}

TEST(CudaTileBanks, TheModelSeesAConflict) {
    // Eight lanes a phase of float4 loads 8 floats apart (one group of 8 columns a thread): lanes
    // 0 and 4 of a phase read different words of banks 0-3, a 2-way conflict.
    std::vector<int> start(kWarp);
    for (int l = 0; l < kWarp; ++l) start[l] = (l % 16) * 8;
    EXPECT_EQ(conflict_degree(start, 4), 2);
    for (int l = 0; l < kWarp; ++l) start[l] = 7;  // one word for all: a broadcast
    EXPECT_EQ(conflict_degree(start, 1), 1);
}

}  // namespace
}  // namespace dt::kernels::cuda
