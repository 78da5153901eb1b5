// SPDX-License-Identifier: MIT
// Hooks a host process sets around its runs (the Python module: callbacks, Ctrl-C). They run on
// the training thread, after a step's update and after an epoch's evaluation. One run at a time
// per process, so the hooks are process-wide.
#pragma once
#include <cstdint>
#include <functional>

#include "apps/train/progress.h"

namespace dt {

/// One finished training step.
struct StepEvent {
    int epoch = 0;            // 1-based
    int64_t step = 0;         // global, 1-based
    int64_t total_steps = 0;  // of the whole run
    double mean_loss = 0;     // of the epoch's batches so far
    double images_per_second = 0;
};

struct TrainHooks {
    /// After every step. True ends the run there with a checkpoint in --out, as --stop-after
    /// does: `detrain train --resume DIR` continues it with the same bits.
    std::function<bool(const StepEvent&)> on_step;
    /// After every epoch's evaluation.
    std::function<void(const EpochStats&)> on_epoch;
};

/// The hooks of the runs that start from now on (default: none).
void set_train_hooks(TrainHooks hooks);
const TrainHooks& train_hooks();

}  // namespace dt
