// SPDX-License-Identifier: MIT
// The shared-memory loads of the tiled block program (kernels/cuda/tile_gemm.h, fma_term) mapped
// lane by lane onto the 32 banks of an NVIDIA GPU's shared memory, for every tile shape: no load
// of a warp meets a bank conflict. The model is the hardware's: 32 banks of 4 bytes; a warp's
// vector load of V floats is served in phases of 32 / V lanes; lanes reading the same word share
// it (broadcast), and two different words in one bank within a phase are a conflict. The
// addresses come from the shapes' own a_row and b_col, so a change of the thread mapping that
// brings a conflict back fails here, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
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
            for (int v = 0; v < vec; ++v)
                words_of_bank[(start[l] + v) % kBanks].insert(start[l] + v);
        for (const auto& [bank, words] : words_of_bank)
            worst = std::max(worst, static_cast<int>(words.size()));
    }
    return worst;
}

/// One panel's vector loads of a warp: group g of `vec` floats of lane l's thread starts at
/// word at(thread, g * vec) + v for its v-th float (adjacent, and aligned to the width, or the GPU
/// could not load it as one vector). Returns the worst conflict degree over the groups.
template <class At>
int panel_conflict(const char* what, int warp, int groups, int vec, const At& at) {
    int worst = 1;
    for (int g = 0; g < groups; ++g) {
        std::vector<int> start(kWarp);
        for (int l = 0; l < kWarp; ++l) {
            const int th = warp * kWarp + l;
            start[l] = at(th, g * vec);
            for (int v = 1; v < vec; ++v) EXPECT_EQ(at(th, g * vec + v), start[l] + v) << what;
            EXPECT_EQ(start[l] % vec, 0) << what << ": a group not aligned";
        }
        const int d = conflict_degree(start, vec);
        EXPECT_EQ(d, 1) << what << ": group " << g << ", warp " << warp;
        worst = std::max(worst, d);
    }
    return worst;
}

/// Every vector load of fma_term for term kk of every warp of shape S: the A rows of a thread in
/// groups of kAVec, its B columns in groups of kBVec. Returns the worst conflict degree.
template <class S>
int worst_load_conflict(const char* name) {
    int worst = 1;
    for (int kk = 0; kk < S::kK; ++kk) {
        for (int w = 0; w < static_cast<int>(S::kThreads) / kWarp; ++w) {
            const auto a_at = [kk](int th, int r) {  // as[kk * kM + a_row(ty, r)]
                return kk * S::kM + S::a_row(th / S::kCols, r);
            };
            const auto b_at = [kk](int th, int c) {  // bs[kk * kN + b_col(tx, c)]
                return kk * S::kN + S::b_col(th % S::kCols, c);
            };
            const std::string a = std::string(name) + " A rows", b = std::string(name) + " B cols";
            worst = std::max({worst,
                              panel_conflict(a.c_str(), w, S::kTM / S::kAVec, S::kAVec, a_at),
                              panel_conflict(b.c_str(), w, S::kTN / S::kBVec, S::kBVec, b_at)});
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
