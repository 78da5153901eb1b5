// SPDX-License-Identifier: MIT
// --micro-batch (apps/train/split_step.h, engine/runtime/batch_split.h): micro-batches whose
// gradients are accumulated give the whole batch's weights bit for bit under exact accumulation
// (the exact sites hand out unrounded sums, rounded once per step), whatever the micro-batch
// size, with dropout, augmentation and in-batch shuffles; the tree mode shows that the equality
// is not a given. Plans, checkpoints and refusals. (On the cuda device:
// tests/apps/train/device_train_test.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "apps/train/checkpoint.h"
#include "apps/train/split_step.h"
#include "apps/train/trainer.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/temp_dir.h"
#include "tests/support/train_args.h"
#include "tests/support/train_runs.h"

namespace dt {
namespace {

using test::expect_same_run;

class MicroBatch : public test::TrainingRuns {
 protected:
    MicroBatch() : TrainingRuns(100, 40) {}

    TrainResult train(const std::string& out, const std::string& extra, int64_t crash = 0,
                      const Checkpoint* from = nullptr) const {
        return test::train_run(test::parse_train(run_flags(out, 20, extra)), crash, from);
    }
};

TEST(SplitPlan, SharesAndMicroStepsCoverTheBatchInOrder) {
    // 10 rows over 3 processes: shares 3, 3, 4; micro-batch 2 -> k = ceil(4 / 2) = 2 steps.
    EXPECT_EQ(micro_steps(10, 3, 2), 2);
    EXPECT_EQ(micro_steps(10, 1, 0), 1);
    std::vector<int64_t> seen;
    for (int r = 0; r < 3; ++r) {
        const SplitPlan p = split_plan(10, r, 3, 2);
        ASSERT_EQ(p.rows.size(), 2u);
        EXPECT_EQ(p.concurrent, (std::vector<int64_t>{4, 6}));  // 1+1+2, 2+2+2
        for (const auto& rows : p.rows) {
            EXPECT_LE(rows.size(), 2u);
            seen.insert(seen.end(), rows.begin(), rows.end());
        }
    }
    std::vector<int64_t> all(10);
    for (int i = 0; i < 10; ++i) all[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(seen, all);  // every row once, rank by rank, in order
}

// --overlap auto: on a GPU, or where this process keeps a core free for the sending thread.
TEST(SplitPlan, OverlapAutoWantsACoreOfItsOwnForTheSendingThread) {
    EXPECT_TRUE(overlap_on("on", false, 64, 1, 1, 8));
    EXPECT_FALSE(overlap_on("off", true, 1, 64, 64, 1));
    EXPECT_TRUE(overlap_on("auto", true, 64, 64, 64, 1));
    // 2 cores, 2 processes of one thread each: no core to spare.
    EXPECT_FALSE(overlap_on("auto", false, 1, 2, 2, 2));
    // 64 cores, 8 processes not bound: 8 cores each, one spare with 7 threads.
    EXPECT_TRUE(overlap_on("auto", false, 7, 64, 64, 8));
    EXPECT_FALSE(overlap_on("auto", false, 8, 64, 64, 8));
    // Bound to 4 cores each: 3 threads leave one.
    EXPECT_TRUE(overlap_on("auto", false, 3, 4, 64, 2));
    EXPECT_FALSE(overlap_on("auto", false, 4, 4, 64, 2));
}

TEST(SplitPlan, APartWithoutSamplesIsRefusedWithARemedy) {
    try {
        (void)split_plan(3, 0, 4, 0);
        FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("a batch of 3 samples cannot be split over 4"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("hint"), std::string::npos) << e.what();
    }
}

TEST_F(MicroBatch, ExactMicroBatchesGiveTheWholeBatchBits) {
    // 100 samples in batches of 32 (the last of 4): micro-batches of 8 (4 per batch), 5 (7 per
    // batch, uneven) and 1; dropout keyed by sample, augmentation, shuffled rows.
    const std::string flags =
        "--model smallcnn --dropout 0.3 --augment crop+flip --shuffle-within-batch 7 "
        "--impl exact --checkpoint-every 0";
    const TrainResult whole = train("whole", flags);
    for (const char* m : {"8", "5", "1"}) {
        SCOPED_TRACE(std::string("--micro-batch ") + m);
        expect_same_run(whole, train(std::string("m") + m, flags + " --micro-batch " + m));
    }
}

TEST_F(MicroBatch, TreeMicroBatchesRoundEveryPartAndDiffer) {
    // The same split under the deterministic (tree) preset: each micro-batch's gradient is
    // rounded, so the bits move; this is what exact buys.
    const std::string flags = "--model smallcnn --impl deterministic";
    EXPECT_NE(train("whole", flags).weights_sha256,
              train("m8", flags + " --micro-batch 8").weights_sha256);
}

TEST_F(MicroBatch, BatchNormWithOneMicroBatchPerBatchKeepsTheBits) {
    // A micro-batch as large as the batch: one part, the whole batch's statistics.
    const std::string flags = "--model smallcnn-bn --impl exact-all";
    expect_same_run(train("whole", flags), train("m32", flags + " --micro-batch 32"));
}

TEST_F(MicroBatch, ACheckpointOfAMicroBatchedRunResumesWithWholeBatches) {
    const std::string flags = "--model smallcnn --impl exact --checkpoint-every 3";
    const TrainResult whole = train("whole", flags);
    EXPECT_THROW(train("split", flags + " --micro-batch 4", 5), test::Crash);
    const Checkpoint ck = read_checkpoint(dir_ / "split");
    expect_same_run(whole, train("split", flags, 0, &ck));
}

TEST_F(MicroBatch, ANegativeSizeIsRefused) {
    try {
        train("neg", "--micro-batch -1");
        FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("--micro-batch"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace dt
