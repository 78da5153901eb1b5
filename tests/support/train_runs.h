// SPDX-License-Identifier: MIT
// In-process training runs for the tests of apps/train (resume, devices): a Progress that
// crashes the run after a given step, and the comparison of two runs' results (weights hash,
// epoch losses bit for bit, accuracies, predictions and, when present, the test logits).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "apps/train/progress.h"
#include "apps/train/trainer.h"

namespace dt::test {

struct Crash {
    int64_t after_step;
};

/// No output; throws Crash after global step `crash_after` (0: never).
class CrashingProgress : public Progress {
 public:
    explicit CrashingProgress(int64_t crash_after) : Progress(Mode::kNone), crash_(crash_after) {}
    void step(int, int64_t, double, double) override {
        if (++steps_ == crash_) throw Crash{steps_};
    }

 private:
    int64_t crash_, steps_ = 0;
};

inline void expect_same_run(const TrainResult& a, const TrainResult& b) {
    EXPECT_EQ(a.weights_sha256, b.weights_sha256);
    ASSERT_EQ(a.history.size(), b.history.size());
    for (std::size_t e = 0; e < a.history.size(); ++e) {
        // Bitwise: the epoch loss is a double sum (carried through checkpoints).
        EXPECT_EQ(std::memcmp(&a.history[e].train_loss, &b.history[e].train_loss, 8), 0)
            << "epoch " << e + 1 << ": " << a.history[e].train_loss << " vs "
            << b.history[e].train_loss;
        EXPECT_EQ(a.history[e].test_accuracy, b.history[e].test_accuracy);
    }
    EXPECT_EQ(a.predictions, b.predictions);
    EXPECT_EQ(a.test_logits, b.test_logits);
}

}  // namespace dt::test
