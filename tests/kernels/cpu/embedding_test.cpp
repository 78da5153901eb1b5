// SPDX-License-Identifier: MIT
// Pins the embedding recipes of kernels/embedding.h on the CPU: the forward is a copy of table
// rows; embed.grad's tree mode equals the dense recipe (every sequence a leaf, +0 for a sequence
// without the id, the pairwise tree over all B of them) bit for bit, within
// (T + tree depth + 2) * eps32 * sum|dy| of the double reference, and rows no id hits are +0.
// The skip of absent leaves (EmbedTree) gives the dense recipe's bits in tree, kahan and
// permuted on special values (signed zeros, infinities, NaN, subnormals). No thread count
// changes a bit. Shapes: V = 1, C odd and past a column chunk, every id equal, unused rows,
// V > 256, positions (ids = t), no rows at all.
#include "kernels/embedding.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/ref/embedding_ref.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using common::AccumSpec;

enum class Ids { kSkewed, kAllEqual, kPositions };
struct Case {
    int64_t V, C, B, T;
    Ids ids;
};
// Skewed ids favour low rows (u^3) and leave many high ones unused.
const Case kCases[] = {{1, 1, 1, 1, Ids::kSkewed},      {1, 5, 3, 4, Ids::kSkewed},
                       {7, 17, 5, 9, Ids::kSkewed},     {256, 33, 9, 31, Ids::kSkewed},
                       {300, 16, 4, 64, Ids::kSkewed},  {4, 3, 17, 5, Ids::kAllEqual},
                       {12, 7, 6, 12, Ids::kPositions}, {3, 2, 0, 4, Ids::kSkewed}};

EmbeddingParams params_of(const Case& k, AccumSpec spec = common::accum_spec(AccumMode::kTree)) {
    return EmbeddingParams{.V = k.V, .C = k.C, .M = k.B * k.T, .T = k.T, .accum = spec};
}

std::string describe(const Case& k) {
    return "V=" + std::to_string(k.V) + " C=" + std::to_string(k.C) + " B=" + std::to_string(k.B) +
           " T=" + std::to_string(k.T);
}

std::vector<int64_t> ids_of(const Case& k, uint32_t tag) {
    const int64_t M = k.B * k.T;
    std::vector<int64_t> ids(static_cast<std::size_t>(M));
    const std::vector<float> u = test::uniform_floats(M, 0, 1, test::test_seed(), tag);
    for (int64_t m = 0; m < M; ++m) {
        const auto skewed = static_cast<int64_t>(static_cast<double>(k.V) * u[m] * u[m] * u[m]);
        ids[m] = k.ids == Ids::kAllEqual    ? k.V / 2
                 : k.ids == Ids::kPositions ? m % k.T
                                            : std::min(skewed, k.V - 1);
    }
    return ids;
}

/// The dense recipe of the header, written plainly: leaf(v, b) for every sequence (+0 when
/// absent), then the mode's combination over all B leaves.
std::vector<float> dense_recipe(const std::vector<int64_t>& ids, const std::vector<float>& dy,
                                const EmbeddingParams& p) {
    const int64_t B = embedding_sequences(p);
    std::vector<float> out(static_cast<std::size_t>(p.V * p.C));
    std::vector<uint32_t> order(static_cast<std::size_t>(B));
    common::permute_order(order.data(), B, p.accum.permute_key);
    for (int64_t v = 0; v < p.V; ++v) {
        for (int64_t c = 0; c < p.C; ++c) {
            std::vector<float> leaves(static_cast<std::size_t>(B), 0.0f);
            std::vector<common::KahanSum> kleaves(static_cast<std::size_t>(B),
                                                  common::kahan_zero());
            for (int64_t b = 0; b < B; ++b)
                for (int64_t t = 0; t < p.T; ++t)
                    if (ids[b * p.T + t] == v) {
                        leaves[b] = leaves[b] + dy[(b * p.T + t) * p.C + c];
                        common::kahan_add(kleaves[b], dy[(b * p.T + t) * p.C + c]);
                    }
            float& o = out[v * p.C + c];
            if (p.accum.mode == AccumMode::kKahan) {
                o = common::kahan_value(common::kahan_tree_combine(kleaves.data(), B));
            } else if (p.accum.mode == AccumMode::kPermuted) {
                o = 0.0f;
                for (uint32_t b : order) o = o + leaves[b];
            } else {
                o = common::reduce_tree_combine(leaves.data(), B);
            }
        }
    }
    return out;
}

std::vector<float> run_backward(const std::vector<int64_t>& ids, const std::vector<float>& dy,
                                const EmbeddingParams& p) {
    std::vector<float> dtable(static_cast<std::size_t>(p.V * p.C), 9.0f);
    cpu::embedding_backward(ids.data(), dy.data(), dtable.data(), p);
    return dtable;
}

TEST(EmbeddingKernel, ForwardCopiesTableRows) {
    for (const Case& k : kCases) {
        SCOPED_TRACE(describe(k));
        const EmbeddingParams p = params_of(k);
        const std::vector<int64_t> ids = ids_of(k, 1);
        const auto table = test::uniform_floats(k.V * k.C, -1, 1, test::test_seed(), 2);
        std::vector<float> y(static_cast<std::size_t>(p.M * p.C), 9.0f), want(y.size());
        cpu::embedding_forward(ids.data(), table.data(), y.data(), p);
        for (int64_t m = 0; m < p.M; ++m)
            for (int64_t c = 0; c < p.C; ++c) want[m * p.C + c] = table[ids[m] * p.C + c];
        ASSERT_TRUE(test::bitwise_equal(y, want));
        std::vector<double> td = test::to_double(table), yd(y.size());
        ref::embedding_forward(ids.data(), td.data(), yd.data(), p);
        for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], static_cast<float>(yd[i]));
    }
}

TEST(EmbeddingKernel, GradMatchesTheDenseTreeBitwiseAndTheBound) {
    for (const Case& k : kCases) {
        SCOPED_TRACE(describe(k));
        const EmbeddingParams p = params_of(k);
        const std::vector<int64_t> ids = ids_of(k, 3);
        const auto dy = test::uniform_floats(p.M * p.C, -1, 1, test::test_seed(), 4);
        const std::vector<float> got = run_backward(ids, dy, p);
        ASSERT_TRUE(test::bitwise_equal(got, dense_recipe(ids, dy, p)));
        std::vector<double> dyd = test::to_double(dy), want(got.size()), mag(got.size()),
                            bound(got.size());
        ref::embedding_backward(ids.data(), dyd.data(), want.data(), p);
        for (double& v : dyd) v = std::fabs(v);
        ref::embedding_backward(ids.data(), dyd.data(), mag.data(), p);
        const double depth = std::ceil(std::log2(static_cast<double>(std::max<int64_t>(k.B, 1))));
        for (std::size_t i = 0; i < bound.size(); ++i)
            bound[i] = (static_cast<double>(k.T) + depth + 2) * test::kEps32 * mag[i];
        ASSERT_TRUE(test::within_bound(got.data(), want.data(), bound.data(), p.V * p.C));
        std::vector<bool> hit(static_cast<std::size_t>(k.V), false);
        for (int64_t id : ids) hit[static_cast<std::size_t>(id)] = true;
        for (int64_t v = 0; v < k.V; ++v)
            for (int64_t c = 0; !hit[v] && c < k.C; ++c)
                ASSERT_EQ(test::bits(got[v * k.C + c]), 0u) << "row " << v << " is not +0";
    }
}

TEST(EmbeddingKernel, SkippedLeavesGiveTheDenseBitsOnSpecialValues) {
    // Rows of -0 only (a leaf +0 + -0 = +0), +-inf (NaN when both meet), NaN, subnormals and
    // large values, among sequences that lack most ids: every skip is exercised.
    const float wild[] = {-0.0f, -0.0f, INFINITY, -INFINITY, NAN, 3e-41f, -7e-45f, 3e38f, 1.0f};
    for (const Case& k : {Case{5, 19, 13, 3, Ids::kSkewed}, Case{9, 4, 37, 2, Ids::kSkewed}}) {
        SCOPED_TRACE(describe(k));
        const std::vector<int64_t> ids = ids_of(k, 5);
        std::vector<float> dy = test::uniform_floats(k.B * k.T * k.C, -1, 1, test::test_seed(), 6);
        for (std::size_t i = 0; i < dy.size(); ++i) {
            const int pick = static_cast<int>((dy[i] + 1) * 10);
            if (pick < 9) dy[i] = wild[pick];
        }
        for (int64_t c = 0; c < k.C; ++c) dy[c] = -0.0f;  // row 0 all -0
        for (AccumMode m : {AccumMode::kTree, AccumMode::kKahan, AccumMode::kPermuted}) {
            SCOPED_TRACE(test::accum_mode_name(m));
            const EmbeddingParams p = params_of(k, common::accum_spec(m, 0x5eed));
            EXPECT_TRUE(test::bitwise_equal(run_backward(ids, dy, p), dense_recipe(ids, dy, p)));
        }
    }
}

TEST(EmbeddingKernel, ExactPartsOfASplitBatchAddUpToTheWholeBatch) {
    // Sequences [0, 3), [3, 7), [7, 11) as three parts adding to one set of accumulators, dtable
    // unwritten (null): rounded once, the whole batch's exact bits, unused rows +0.
    const Case k{40, 19, 11, 13, Ids::kSkewed};
    const std::vector<int64_t> ids = ids_of(k, 9);
    const auto dy = test::uniform_floats(k.B * k.T * k.C, -1, 1, test::test_seed(), 10);
    const common::AccumSpec exact = common::accum_spec(AccumMode::kExact);
    const std::vector<float> whole = run_backward(ids, dy, params_of(k, exact));
    std::vector<common::ExactAcc> accs(static_cast<std::size_t>(k.V * k.C));
    for (common::ExactAcc& a : accs) common::exact_init(a);
    for (const auto& [b0, b1] : {std::pair{0, 3}, std::pair{3, 7}, std::pair{7, 11}}) {
        EmbeddingParams p = params_of(Case{k.V, k.C, b1 - b0, k.T, k.ids}, exact);
        p.exact_out = accs.data();
        cpu::embedding_backward(ids.data() + b0 * k.T, dy.data() + b0 * k.T * k.C, nullptr, p);
    }
    std::vector<float> got;
    for (const common::ExactAcc& a : accs) got.push_back(common::exact_value(a));
    EXPECT_TRUE(test::bitwise_equal(got, whole));
}

TEST(EmbeddingKernel, ThreadCountChangesNoBit) {
    const Case k{256, 48, 16, 64, Ids::kSkewed};  // M * C above the parallel threshold
    const std::vector<int64_t> ids = ids_of(k, 7);
    const auto dy = test::uniform_floats(k.B * k.T * k.C, -1, 1, test::test_seed(), 8);
    for (const AccumSpec& spec : test::all_mode_specs(3)) {
        if (spec.mode == AccumMode::kAtomic) continue;
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const EmbeddingParams p = params_of(k, spec);
        omp_set_num_threads(1);
        const std::vector<float> first = run_backward(ids, dy, p);
        for (int threads : {2, 3, 4, 7}) {
            omp_set_num_threads(threads);
            ASSERT_TRUE(test::bitwise_equal(run_backward(ids, dy, p), first)) << threads;
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace
}  // namespace dt::kernels
