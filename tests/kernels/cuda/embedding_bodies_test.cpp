// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA embedding kernels (kernels/cuda/embedding_bodies.h) over
// every thread of their launch grids on the host, against the CPU kernel: the forward bitwise;
// embed.grad bitwise in tree, kahan, exact and permuted, close under atomic (a thread per
// element there, rows per thread on the CPU: other roundings, on purpose). The scan runs as the
// block program it is (real barriers, tests/support/block_runner.h). Each launch runs on the
// launcher's grid and on a small one (3 blocks of 32), whose threads stride over many elements.
// Shapes: V = 1, C odd, every id equal, skewed ids with unused rows, V > 256 with more keys
// (V * B) than the scan's threads, positions, no rows. A split batch's exact parts add up to the
// whole batch's bits.
#include "kernels/cuda/embedding_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/cuda/launch_shape.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

struct Case {
    int64_t V, C, B, T;
    int ids;  // 0: skewed (u^3, unused high rows), 1: every id equal, 2: positions
};
const Case kCases[] = {{1, 1, 1, 1, 0},  {7, 17, 5, 9, 0},  {256, 33, 9, 31, 0}, {300, 5, 4, 64, 0},
                       {4, 3, 17, 5, 1}, {12, 7, 6, 12, 2}, {3, 2, 0, 4, 0}};

std::string describe(const Case& k) {
    return "V=" + std::to_string(k.V) + " C=" + std::to_string(k.C) + " B=" + std::to_string(k.B) +
           " T=" + std::to_string(k.T);
}

std::vector<int64_t> ids_of(const Case& k) {
    const int64_t M = k.B * k.T;
    const std::vector<float> u = test::uniform_floats(M, 0, 1, test::test_seed(), 11);
    std::vector<int64_t> ids(static_cast<std::size_t>(M));
    for (int64_t m = 0; m < M; ++m) {
        const auto skewed = static_cast<int64_t>(static_cast<double>(k.V) * u[m] * u[m] * u[m]);
        ids[m] = k.ids == 1 ? k.V - 1 : k.ids == 2 ? m % k.T : std::min(skewed, k.V - 1);
    }
    return ids;
}

/// A launch of n elements: the launcher's grid, or 3 blocks of 32 threads.
struct Grid {
    uint32_t blocks, threads;
};
Grid grid_of(int64_t n, bool small) {
    return small ? Grid{3, 32} : Grid{cuda::elementwise_blocks(n), cuda::kElementwiseThreads};
}

/// The sort of kernels/cuda/embedding.cu (count, scan, place) on the host.
struct Sorted {
    std::vector<int32_t> start, rows;
};
Sorted sort_on_grid(const std::vector<int64_t>& ids, const EmbeddingParams& p, bool small) {
    const int64_t keys = p.V * embedding_sequences(p);
    Sorted s{std::vector<int32_t>(static_cast<std::size_t>(keys + 1), 0),
             std::vector<int32_t>(static_cast<std::size_t>(p.M), -1)};
    const cuda::EmbedSort es{s.start.data(), s.rows.data()};
    if (p.M == 0) return s;
    const common::Divisor T = common::make_divisor(p.T);
    const Grid g = grid_of(p.M, small);
    for_each_thread(g.blocks, g.threads,
                    [&](const GridPos& t) { cuda::embed_count_body(t, ids.data(), es, p, T); });
    test::run_blocks(1, small ? 32 : cuda::kEmbedScanThreads,
                     static_cast<int>(cuda::kEmbedScanThreads) + 1,
                     [&](const GridPos& t, float* shared, const test::HostSync& sync) {
                         cuda::embed_scan_block(t, reinterpret_cast<int32_t*>(shared), sync,
                                                s.start.data(), keys);
                     });
    for_each_thread(g.blocks, g.threads,
                    [&](const GridPos& t) { cuda::embed_place_body(t, ids.data(), es, p, T); });
    return s;
}

/// embedding_backward's launch sequence on the host.
std::vector<float> backward_on_grid(const std::vector<int64_t>& ids, const std::vector<float>& dy,
                                    const EmbeddingParams& p, bool small) {
    std::vector<float> dtable(static_cast<std::size_t>(p.V * p.C), 9.0f);
    const common::Divisor C = common::make_divisor(p.C);
    if (p.accum.mode == common::AccumMode::kAtomic) {
        std::fill(dtable.begin(), dtable.end(), 0.0f);
        const Grid g = grid_of(p.M * p.C, small);
        for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
            cuda::embedding_atomic_body(t, ids.data(), dy.data(), dtable.data(), p.M, C);
        });
        return dtable;
    }
    Sorted s = sort_on_grid(ids, p, small);
    const int64_t B = embedding_sequences(p);
    std::vector<uint32_t> order(static_cast<std::size_t>(B));
    common::permute_order(order.data(), B, p.accum.permute_key);
    const Grid g = grid_of(p.V * p.C, small);
    for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
        cuda::embedding_grad_body(t, dy.data(), cuda::EmbedSort{s.start.data(), s.rows.data()},
                                  order.data(), dtable.data(), p, C);
    });
    return dtable;
}

TEST(CudaEmbeddingBodies, ForwardIsTheCpus) {
    for (const Case& k : kCases) {
        SCOPED_TRACE(describe(k));
        const EmbeddingParams p{.V = k.V, .C = k.C, .M = k.B * k.T, .T = k.T};
        const std::vector<int64_t> ids = ids_of(k);
        const auto table = test::uniform_floats(k.V * k.C, -1, 1, test::test_seed(), 12);
        std::vector<float> want(static_cast<std::size_t>(p.M * p.C), NAN), got = want;
        cpu::embedding_forward(ids.data(), table.data(), want.data(), p);
        for (const bool small : {false, true}) {
            const Grid g = grid_of(p.M * p.C, small);
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::embedding_forward_body(t, ids.data(), table.data(), got.data(), p.M,
                                             common::make_divisor(p.C));
            });
            EXPECT_TRUE(test::bitwise_equal(got, want)) << (small ? "small grid" : "");
        }
    }
}

TEST(CudaEmbeddingBodies, SortGroupsRowsByIdThenSequencePositionsAscending) {
    for (const Case& k : kCases) {
        SCOPED_TRACE(describe(k));
        const EmbeddingParams p{.V = k.V, .C = k.C, .M = k.B * k.T, .T = k.T};
        const std::vector<int64_t> ids = ids_of(k);
        for (const bool small : {false, true}) {
            const Sorted s = sort_on_grid(ids, p, small);
            // The stable counting sort by key (v, b) = ids[m] * B + m / T, written plainly.
            std::vector<int32_t> want;
            for (int64_t key = 0; key < k.V * k.B; ++key)
                for (int64_t m = 0; m < p.M; ++m)
                    if (ids[m] * k.B + m / k.T == key) want.push_back(static_cast<int32_t>(m));
            EXPECT_EQ(s.rows, want) << (small ? "small grid" : "");
            for (int64_t key = 0; key < k.V * k.B; ++key) {
                int64_t n = 0;
                for (int64_t m = 0; m < p.M; ++m) n += ids[m] * k.B + m / k.T == key ? 1 : 0;
                ASSERT_EQ(s.start[key + 1] - s.start[key], n) << "key " << key;
            }
            EXPECT_EQ(s.start.front(), 0);
            EXPECT_EQ(s.start.back(), p.M);
        }
    }
}

TEST(CudaEmbeddingBodies, EveryModeEqualsTheCpu) {
    for (const Case& k : kCases) {
        SCOPED_TRACE(describe(k));
        const std::vector<int64_t> ids = ids_of(k);
        std::vector<float> dy = test::uniform_floats(k.B * k.T * k.C, -1, 1, test::test_seed(), 13);
        if (dy.size() > 7) dy[5] = 3e7f, dy[6] = -3e7f;  // cancellation: the modes round apart
        for (const common::AccumSpec& spec : test::all_mode_specs(31)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            const EmbeddingParams p{.V = k.V, .C = k.C, .M = k.B * k.T, .T = k.T, .accum = spec};
            std::vector<float> want(static_cast<std::size_t>(p.V * p.C), NAN);
            cpu::embedding_backward(ids.data(), dy.data(), want.data(), p);
            for (const bool small : {false, true}) {
                const std::vector<float> got = backward_on_grid(ids, dy, p, small);
                if (spec.mode != common::AccumMode::kAtomic) {
                    EXPECT_TRUE(test::bitwise_equal(got, want)) << (small ? "small grid" : "");
                    continue;
                }
                for (std::size_t i = 0; i < want.size(); ++i)
                    ASSERT_NEAR(got[i], want[i], 8.0f) << i;  // 3e7's ulp is 2
            }
        }
    }
}

TEST(CudaEmbeddingBodies, ExactPartsOfASplitBatchAddUpToTheWholeBatch) {
    // Sequences [0, 2), [2, 5), [5, 9): each part's grad threads add their elements' unrounded
    // sums to the accumulators and write no dtable element (it stays 9).
    const Case k{256, 33, 9, 31, 0};
    const std::vector<int64_t> ids = ids_of(k);
    const auto dy = test::uniform_floats(k.B * k.T * k.C, -1, 1, test::test_seed(), 14);
    EmbeddingParams whole{.V = k.V, .C = k.C, .M = k.B * k.T, .T = k.T};
    whole.accum = common::accum_spec(common::AccumMode::kExact);
    std::vector<float> want(static_cast<std::size_t>(k.V * k.C));
    cpu::embedding_backward(ids.data(), dy.data(), want.data(), whole);
    std::vector<common::ExactAcc> accs(want.size());
    for (common::ExactAcc& a : accs) common::exact_init(a);
    for (const auto& [b0, b1] : {std::pair{0, 2}, std::pair{2, 5}, std::pair{5, 9}}) {
        EmbeddingParams p = whole;
        p.M = (b1 - b0) * k.T;
        p.exact_out = accs.data();
        const std::vector<int64_t> part(ids.begin() + b0 * k.T, ids.begin() + b1 * k.T);
        const std::vector<float> dpart(dy.begin() + b0 * k.T * k.C, dy.begin() + b1 * k.T * k.C);
        const std::vector<float> untouched = backward_on_grid(part, dpart, p, b0 == 2);
        EXPECT_TRUE(test::bitwise_equal(untouched, std::vector<float>(want.size(), 9.0f)));
    }
    std::vector<float> got;
    for (const common::ExactAcc& a : accs) got.push_back(common::exact_value(a));
    EXPECT_TRUE(test::bitwise_equal(got, want));
}

}  // namespace
}  // namespace dt::kernels
