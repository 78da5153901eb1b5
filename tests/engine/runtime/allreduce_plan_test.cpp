// SPDX-License-Identifier: MIT
// plan_allreduce (engine/runtime/allreduce_plan.h): which splits keep the single process's tree.
// SmallCNN on 28x28 has convolutions of 784, 196 and 49 positions: conv.wgrad leaves of 16, 16
// and 32 samples. Tests/mpi/data_parallel_test.cpp trains the tree-invariant splits and checks
// the weights.
#include "engine/runtime/allreduce_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dt {
namespace {

const std::vector<int64_t> kSmallCnn = {784, 196, 49};

ReduceSiteSpecs all(AccumMode m) {
    ReduceSiteSpecs s;
    s.fill(kernels::common::accum_spec(m));
    return s;
}

/// Every site tree but `site`, in mode m.
ReduceSiteSpecs tree_but(ReduceSite site, AccumMode m) {
    ReduceSiteSpecs s = all(AccumMode::kTree);
    s[static_cast<std::size_t>(site)] = kernels::common::accum_spec(m);
    return s;
}

SplitShape split(int P, std::vector<int64_t> batches) {
    SplitShape s;
    s.processes = P;
    s.batch_sizes = std::move(batches);
    return s;
}

AllreducePlan plan(const SplitShape& s, const ReduceSiteSpecs& specs = all(AccumMode::kTree),
                   const std::vector<int64_t>& convs = kSmallCnn) {
    return plan_allreduce(s, specs, convs);
}

TEST(AllreducePlan, PowerOfTwoBlocksOfEveryLeafAreInvariant) {
    for (int P : {1, 2, 4}) {
        const AllreducePlan p = plan(split(P, {128, 128}));
        EXPECT_EQ(p.kind, "tree-invariant") << "P = " << P << ": " << p.why;
        EXPECT_EQ(p.why, "");
    }
    // Three shares of 32 samples: the tree over three blocks is the left-complete tree.
    EXPECT_EQ(plan(split(3, {96})).kind, "tree-invariant");
}

TEST(AllreducePlan, UnevenSharesAndCutLeavesGather) {
    const AllreducePlan p3 = plan(split(3, {128}));
    EXPECT_EQ(p3.kind, "tree-gather");
    EXPECT_NE(p3.why.find("does not split evenly over 3"), std::string::npos) << p3.why;
    // A last batch of 96: shares of 48 samples, three leaves of 16.
    const AllreducePlan last = plan(split(2, {128, 96}));
    EXPECT_EQ(last.kind, "tree-gather");
    EXPECT_NE(last.why.find("48 samples"), std::string::npos) << last.why;
    // Shares of 16 cut the 7x7 layer's leaves of 32 samples.
    const AllreducePlan cut = plan(split(8, {128}));
    EXPECT_EQ(cut.kind, "tree-gather");
    EXPECT_NE(cut.why.find("conv.wgrad's leaves of 32"), std::string::npos) << cut.why;
    // An exact site rounds each process's exact sum under grad.allreduce tree.
    const ReduceSiteSpecs specs = tree_but(ReduceSite::kConvWgrad, AccumMode::kExact);
    const AllreducePlan exact = plan(split(2, {128}), specs);
    EXPECT_EQ(exact.kind, "tree-gather");
    EXPECT_NE(exact.why.find("conv.wgrad is exact"), std::string::npos) << exact.why;
    // One process without micro-batches has one part, whatever its sites.
    EXPECT_EQ(plan(split(1, {128, 96}), specs).kind, "tree-invariant");
}

TEST(AllreducePlan, TokenLeavesNeedPowerOfTwoRowsAndTiedParametersGather) {
    SplitShape s = split(2, {16});
    s.rows_per_sample = 32;  // a language model: linear.wgrad's leaves are token rows
    EXPECT_EQ(plan(s, all(AccumMode::kTree), {}).kind, "tree-invariant");
    s.rows_per_sample = 24;
    const AllreducePlan p = plan(s, all(AccumMode::kTree), {});
    EXPECT_EQ(p.kind, "tree-gather");
    EXPECT_NE(p.why.find("192 rows"), std::string::npos) << p.why;
    s.rows_per_sample = 32, s.tied_parameters = true;  // the GPT's tied table
    EXPECT_NE(plan(s, all(AccumMode::kTree), {}).why.find("tied"), std::string::npos);
}

TEST(AllreducePlan, MicroBatchesUnsyncedBatchNormAndRoundedPartsGather) {
    SplitShape micro = split(1, {128});
    micro.micro_steps = 2;
    EXPECT_EQ(plan(micro).kind, "tree-gather");
    SplitShape bn = split(2, {128});
    bn.batchnorm = true, bn.sync_batchnorm = false;
    EXPECT_NE(plan(bn).why.find("--sync-bn"), std::string::npos);
    bn.sync_batchnorm = true;
    EXPECT_EQ(plan(bn).kind, "tree-invariant");
    const AllreducePlan k =
        plan(split(2, {128}), tree_but(ReduceSite::kBiasGrad, AccumMode::kKahan));
    EXPECT_EQ(k.kind, "tree-gather");
    EXPECT_NE(k.why.find("bias.grad is kahan"), std::string::npos) << k.why;
}

TEST(AllreducePlan, OtherAllreduceModesReportTheirName) {
    for (AccumMode m :
         {AccumMode::kExact, AccumMode::kKahan, AccumMode::kPermuted, AccumMode::kAtomic}) {
        const AllreducePlan p = plan(split(3, {128}), all(m));
        EXPECT_EQ(p.kind, kernels::common::accum_mode_name(m));
        EXPECT_EQ(p.why, "");
    }
}

}  // namespace
}  // namespace dt
