// SPDX-License-Identifier: MIT
// Crash and resume in process: run_training on a tiny synthetic IDX set (192 train / 64 test,
// batch 32: 6 steps per epoch, 2 epochs), stopped by an exception thrown from the progress
// callback after step S (a crash that leaves the checkpoint of the last multiple of N steps),
// then resumed from DIR/checkpoint.safetensors. The resumed run must end with the weights,
// optimizer state and history (loss and accuracy bits) of the uninterrupted run, in every
// deterministic mode, from checkpoints inside an epoch and at an epoch's end (evaluation
// pending). Also: NaN keeps the last good checkpoint; the --resume flag rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "apps/train/checkpoint.h"
#include "apps/train/train_resume.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_noise.h"
#include "engine/core/error.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/temp_dir.h"
#include "tests/support/train_args.h"
#include "tests/support/train_runs.h"

namespace dt {
namespace {

using test::Crash;
using test::expect_same_run;
using test::train_run;

class Resume : public test::TrainingRuns {
 protected:
    Resume() : TrainingRuns(192, 64) {}

    /// `detrain train` flags for a run into DIR/<out>.
    std::string args(const std::string& out, const std::string& extra) const {
        return run_flags(out, 50, extra);
    }

    /// Crashes a run after `crash_after` steps, then resumes it (the flags as given plus
    /// --resume); returns the resumed run.
    TrainResult crash_and_resume(const std::string& out, const std::string& extra,
                                 int64_t crash_after) {
        const TrainConfig cfg = test::parse_train(args(out, extra));
        EXPECT_THROW(train_run(cfg, crash_after), Crash);
        const Checkpoint ck = read_checkpoint(dir_ / out);
        std::vector<std::string> given;
        const TrainConfig again =
            test::parse_train_given(args(out, extra) + " --resume " + dir_ / out, given);
        return train_run(resume_config(ck, again, given), 0, &ck);
    }
};

TEST_F(Resume, ResumedRunEqualsTheUninterruptedOneInEveryDeterministicMode) {
    // permuted: the reduce-site call counters key each call's order, so they must be restored.
    const char* impls[] = {"deterministic", "kahan", "exact", "exact-all", "permuted:7"};
    for (const char* impl : impls) {
        SCOPED_TRACE(impl);
        const std::string flags = std::string("--impl ") + impl + " --checkpoint-every 4";
        const TrainResult whole = train_run(test::parse_train(args("whole", flags)));
        // After step 5 the last checkpoint is step 4 (inside epoch 1); after step 7 it is
        // step 4 as well, and after step 9 it is step 8 (inside epoch 2).
        for (int64_t crash : {5, 9}) {
            SCOPED_TRACE(crash);
            expect_same_run(whole, crash_and_resume("crashed", flags, crash));
        }
    }
}

TEST_F(Resume, CheckpointAtAnEpochsEndResumesWithItsEvaluation) {
    // Every 6 steps = at the end of epoch 1, before its evaluation; batch-norm statistics too.
    const std::string flags = "--model smallcnn-bn --checkpoint-every 6 --seed-shuffle 3";
    const TrainResult whole = train_run(test::parse_train(args("whole", flags)));
    const TrainResult resumed = crash_and_resume("crashed", flags, 8);
    expect_same_run(whole, resumed);
    const Checkpoint ck = read_checkpoint(dir_ / "crashed");
    EXPECT_EQ(ck.position.global_step, 12);  // the resumed run went on checkpointing
}

TEST_F(Resume, RandomSeedsAreResumedAsDrawn) {
    const std::string flags = "--seed random --checkpoint-every 4";
    const TrainConfig first = test::parse_train(args("crashed", flags));
    EXPECT_THROW(train_run(first, 6), Crash);
    const Checkpoint ck = read_checkpoint(dir_ / "crashed");
    std::vector<std::string> given;
    const TrainConfig again =
        test::parse_train_given(args("crashed", flags) + " --resume " + dir_ / "crashed", given);
    EXPECT_TRUE(resume_differences(ck, again, given).empty());
    const TrainConfig resumed = resume_config(ck, again, given);
    EXPECT_EQ(resumed.init_seed(), first.init_seed());
    EXPECT_EQ(resumed.shuffle_seed(), first.shuffle_seed());
    TrainConfig whole = first;
    whole.out = dir_ / "whole";
    expect_same_run(train_run(whole), train_run(resumed, 0, &ck));
}

TEST_F(Resume, DifferingFlagsAreListedAndRefusedUnlessForced) {
    const std::string flags = "--seed 5 --checkpoint-every 2";
    EXPECT_THROW(train_run(test::parse_train(args("run", flags)), 3), Crash);
    const Checkpoint ck = read_checkpoint(dir_ / "run");
    std::vector<std::string> given;
    auto differences = [&](const std::string& cmd) {
        const TrainConfig c = test::parse_train_given(cmd + " --resume " + dir_ / "run", given);
        return resume_differences(ck, c, given);
    };
    // Repeating the run's flags, or giving none but --resume, is no difference; nor are the
    // run-only flags.
    EXPECT_TRUE(differences(args("run", flags)).empty());
    EXPECT_TRUE(differences("--threads 1 --progress plain --checkpoint-every 3").empty());
    std::vector<std::string> d = differences("--lr 1e-3 --epochs 3 --seed 5");
    ASSERT_EQ(d.size(), 2u);  // in the order of --help
    EXPECT_EQ(d[0], "--epochs: the run has 2, given 3");
    EXPECT_EQ(d[1], "--lr: the run has 0.002, given 0.001");
    d = differences("--seed 6");
    ASSERT_EQ(d.size(), 4u);  // the four sources
    const std::string init =
        "noise sources.init: the run has {\"kind\":\"fixed\",\"seed\":5}, the given --seed make "
        "{\"kind\":\"fixed\",\"seed\":6}";
    EXPECT_NE(std::find(d.begin(), d.end(), init), d.end()) << d[0];
    d = differences("--replay x.json --out " + dir_ / "elsewhere");
    ASSERT_EQ(d.size(), 2u);
    EXPECT_NE(d[0].find("--out: a resumed run writes into its --resume directory"),
              std::string::npos);
    EXPECT_EQ(d[1], "--replay: cannot be combined with --resume");

    TrainConfig c = test::parse_train_given("--lr 1e-3 --resume " + dir_ / "run", given);
    try {
        resume_config(ck, c, given);
        ADD_FAILURE() << "a differing --lr was accepted";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("--lr: the run has 0.002, given 0.001"),
                  std::string::npos);
        EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos);
    }
    c.force = true;
    const TrainConfig forced = resume_config(ck, c, given);
    EXPECT_EQ(forced.lr, 1e-3);
    EXPECT_EQ(forced.init_seed(), 5u);  // everything else is the run's
    EXPECT_EQ(forced.checkpoint_every, 2);
}

TEST_F(Resume, DivergenceKeepsTheLastGoodCheckpoint) {
    // SGD with lr 1e4: the first update blows the weights up, a later loss is not finite.
    const TrainConfig cfg = test::parse_train(
        args("nan", "--optimizer sgd --momentum 0 --lr 1e4 --checkpoint-every 1"));
    try {
        train_run(cfg);
        FAIL() << "training did not diverge";
    } catch (const TrainingDiverged& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("last good checkpoint (after global step"), std::string::npos) << what;
        const Checkpoint ck = read_checkpoint(dir_ / "nan");  // valid, and before the bad step
        EXPECT_NE(what.find(str("global step ", ck.position.global_step + 1, ")")),
                  std::string::npos)
            << what;
    }
}

TEST_F(Resume, StopAfterEndsWithACheckpointAndTheResumedRunIsTheWholeOne) {
    // 2 epochs of 6 steps. Step 3: inside epoch 1; step 6: its last, before its evaluation;
    // step 8: inside epoch 2. At or past the run's end (12), the run simply finishes.
    const std::string flags = "--impl deterministic";
    const TrainResult whole = train_run(test::parse_train(args("whole", flags)));
    for (int64_t stop : {3, 6, 8}) {
        SCOPED_TRACE(stop);
        const std::string out = "stopped-" + std::to_string(stop);
        const std::string stopping = flags + " --stop-after " + std::to_string(stop);
        const TrainResult first = train_run(test::parse_train(args(out, stopping)));
        EXPECT_EQ(first.stopped_after, stop);
        EXPECT_TRUE(first.history.empty() && first.weights_sha256.empty());  // no results yet
        const Checkpoint ck = read_checkpoint(dir_ / out);
        EXPECT_EQ(ck.position.global_step, stop);
        EXPECT_EQ(ck.position.history.size(), stop > 6 ? 1u : 0u);  // epoch 1 evaluated
        std::vector<std::string> given;
        const TrainConfig again =
            test::parse_train_given(args(out, flags) + " --resume " + dir_ / out, given);
        const TrainResult rest = train_run(resume_config(ck, again, given), 0, &ck);
        EXPECT_EQ(rest.stopped_after, 0);
        expect_same_run(whole, rest);
    }
    const TrainResult past = train_run(test::parse_train(args("past", flags + " --stop-after 12")));
    EXPECT_EQ(past.stopped_after, 0);
    expect_same_run(whole, past);
}

TEST_F(Resume, AResumedRunStopsAgainOnlyWhenToldAndNeverBeforeItsPosition) {
    const TrainResult whole = train_run(test::parse_train(args("whole", "")));
    EXPECT_EQ(train_run(test::parse_train(args("run", "--stop-after 4"))).stopped_after, 4);
    auto resumed = [&](const std::string& extra) {
        const Checkpoint ck = read_checkpoint(dir_ / "run");
        std::vector<std::string> given;
        const TrainConfig again =
            test::parse_train_given(args("run", extra) + " --resume " + dir_ / "run", given);
        return train_run(resume_config(ck, again, given), 0, &ck);
    };
    try {
        resumed("--stop-after 4");
        ADD_FAILURE() << "a stop at the checkpoint's own step was taken";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("--stop-after 4: the run is at global step 4 already"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(resumed("--stop-after 9").stopped_after, 9);  // another slot of the same run
    const TrainResult rest = resumed("");                   // not recorded: goes to the end
    EXPECT_EQ(rest.stopped_after, 0);
    expect_same_run(whole, rest);
}

}  // namespace
}  // namespace dt
