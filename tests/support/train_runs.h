// SPDX-License-Identifier: MIT
// In-process training runs for the tests of apps/train (resume, devices, micro-batches): their
// fixture (a fresh folder with the synthetic IDX set and the flags of a run on it), a Progress
// that crashes the run after a given step, and the comparison of two runs' results (weights
// hash, epoch losses bit for bit, accuracies, predictions and, when present, the test logits).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "apps/train/progress.h"
#include "apps/train/trainer.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/temp_dir.h"

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

/// Trains `cfg` in process from `from` (a checkpoint, or nullptr: from the start), throwing Crash
/// after global step `crash_after` (0: never).
inline TrainResult train_run(const TrainConfig& cfg, int64_t crash_after = 0,
                             const Checkpoint* from = nullptr) {
    CrashingProgress progress(crash_after);
    return run_training(cfg, progress, from);
}

/// The fixture of in-process training tests: a fresh folder holding the synthetic IDX set of
/// n_train training and n_test test examples in data/.
class TrainingRuns : public ::testing::Test {
 protected:
    TrainingRuns(int n_train, int n_test) {
        write_synthetic_idx(dir_.path / "data", n_train, n_test);
    }

    /// The flags of a run on that set into DIR/<out>: 2 epochs of batches of 32 at lr 2e-3 on 2
    /// threads, evaluated in batches of `eval_batch`; then `extra` (later flags win).
    std::string run_flags(const std::string& out, int eval_batch, const std::string& extra) const {
        return "--data-dir " + dir_ / "data" + " --out " + dir_ / out +
               " --epochs 2 --batch-size 32 --lr 2e-3 --eval-batch-size " +
               std::to_string(eval_batch) + " --threads 2 " + extra;
    }

    TempDir dir_;
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
