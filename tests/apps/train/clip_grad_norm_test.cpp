// SPDX-License-Identifier: MIT
// --clip-grad-norm (engine/optim/clip.h, site grad.norm): a limit the gradients exceed changes
// the weights, the same way on every rerun; one they never reach changes no bit; under exact,
// micro-batches clip the whole batch's gradient and keep its bits; bad limits are refused.
#include <gtest/gtest.h>

#include <string>

#include "apps/train/trainer.h"
#include "engine/core/error.h"
#include "tests/support/errors.h"
#include "tests/support/train_args.h"
#include "tests/support/train_runs.h"

namespace dt {
namespace {

using test::expect_same_run;

class ClipGradNorm : public test::TrainingRuns {
 protected:
    ClipGradNorm() : TrainingRuns(100, 40) {}

    TrainResult train(const std::string& out, const std::string& extra) const {
        return test::train_run(test::parse_train(run_flags(out, 20, extra)));
    }
};

TEST_F(ClipGradNorm, ALimitTheGradientsExceedChangesTheWeightsReproducibly) {
    const std::string flags = "--model smallcnn --impl deterministic --checkpoint-every 0";
    const TrainResult none = train("none", flags);
    const TrainResult clipped = train("clipped", flags + " --clip-grad-norm 0.01");
    EXPECT_NE(none.weights_sha256, clipped.weights_sha256);
    expect_same_run(clipped, train("again", flags + " --clip-grad-norm 0.01"));
    // A limit no gradient reaches: the unclipped bits.
    expect_same_run(none, train("far", flags + " --clip-grad-norm 1e30"));
}

TEST_F(ClipGradNorm, ExactMicroBatchesClipTheWholeBatchsGradient) {
    const std::string flags =
        "--model smallcnn --impl exact --clip-grad-norm 0.05 --checkpoint-every 0";
    expect_same_run(train("whole", flags), train("m8", flags + " --micro-batch 8"));
}

TEST(ClipGradNormFlag, RefusesLimitsThatAreNotANormOrZero) {
    for (const char* bad : {"-1", "nan", "inf"}) {
        SCOPED_TRACE(bad);
        EXPECT_TRUE(test::has(test::message_of<ValueError>([&] {
                                  test::parse_train(std::string("--clip-grad-norm ") + bad);
                              }),
                              "--clip-grad-norm"));
    }
    EXPECT_EQ(test::parse_train("--clip-grad-norm 0").clip_grad_norm, 0.0);
}

}  // namespace
}  // namespace dt
