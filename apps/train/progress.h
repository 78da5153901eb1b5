// SPDX-License-Identifier: MIT
// Progress: where run_training reports what it is doing. Three modes:
//   bar   - one live line on a terminal, redrawn with '\r' at most ~10 times a second:
//           "epoch 2/10 [#######.........]  41%  loss 0.4127  3120 img/s  ETA 1m05s"
//   plain - one line per ~10% of an epoch plus one per finished epoch (logs, pipes, CI)
//   none  - silent
// Every mode but none first prints the configuration in effect, including a "noise" block with
// every noise switch (sources with their resolved seeds, implementation per reduce site). Output
// goes to a FILE* (stderr by default) so stdout stays free for the final summary. Methods are
// virtual so a later `detrain study` can collect the same events.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dt {

struct TrainConfig;

/// Numbers of one finished epoch (also result.json's "history" entries).
struct EpochStats {
    int epoch = 0;                 // 1-based
    double train_loss = 0;         // mean of the epoch's batch losses (batch order, double)
    double test_accuracy = 0;      // fraction in [0, 1]
    double seconds = 0;            // training + evaluation wall time
    double train_seconds = 0;      // training steps only
    double images_per_second = 0;  // training images / train_seconds
    // Language models (gpt): the mean cross-entropy per validation token, in nats, and in bits
    // per byte (loss / ln 2). NaN for classifiers.
    double validation_loss = std::nan("");
    double bits_per_byte = std::nan("");
};

/// Facts about a run that are known only once data and model are loaded.
struct RunInfo {
    int64_t train_size = 0, test_size = 0;
    int channels = 0, height = 0, width = 0, num_classes = 0;
    int64_t steps_per_epoch = 0;
    int64_t num_parameters = 0;
    std::string init_perturb;  // --init-perturb: "conv1.weight[0]: <before> -> <after>", or ""
    int processes = 1;         // of a data-parallel run
    std::string allreduce;     // engine/runtime/allreduce_plan.h: its kind, and why for tree-gather
};

class Progress {
 public:
    enum class Mode { kBar, kPlain, kNone };
    /// "auto" -> kBar when `out` is a terminal, else kPlain; "bar" | "plain" | "none".
    static Mode parse_mode(const std::string& name, std::FILE* out = stderr);

    explicit Progress(Mode mode, std::FILE* out = stderr) : mode_(mode), out_(out) {}
    virtual ~Progress() = default;

    /// Before the first step: prints the configuration in effect.
    virtual void start(const TrainConfig& cfg, const RunInfo& info);
    /// After training step `step` (1-based) of `epoch` (1-based). `mean_loss` is the mean of the
    /// epoch's batch losses so far, `images_per_second` the epoch's training rate so far.
    virtual void step(int epoch, int64_t step, double mean_loss, double images_per_second);
    /// Evaluation of `epoch` begins (the bar says so while it runs).
    virtual void evaluating(int epoch);
    /// After the evaluation of an epoch.
    virtual void epoch_end(const EpochStats& stats);
    /// A free-form line (e.g. "loading data..."); not shown with --progress none.
    virtual void note(const std::string& line);
    /// A line shown in every mode, --progress none included: what a log must keep (a run that
    /// restarted from the beginning).
    void notice(const std::string& line);

    Mode mode() const { return mode_; }

 private:
    void clear_bar();
    Mode mode_;
    std::FILE* out_;
    int epochs_ = 0;
    int64_t steps_per_epoch_ = 0;
    std::chrono::steady_clock::time_point run_start_, last_draw_;
    bool bar_visible_ = false;
    int64_t last_plain_decile_ = -1;
};

/// "1h02m", "3m05s", "12s" for ETAs and durations.
std::string format_duration(double seconds);

}  // namespace dt
