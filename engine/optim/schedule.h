// SPDX-License-Identifier: MIT
// Learning-rate schedules, evaluated per training step (host-side, double precision).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct ScheduleConfig {
    std::string kind = "constant";  // constant | step | cosine
    double step_epochs = 30;        // step: multiply by gamma every step_epochs epochs
    double gamma = 0.1;             // step
    double warmup_epochs = 0;       // cosine: linear warm-up from 0 over this many epochs
    double min_lr = 0;              // cosine: floor at the end
};

/// Learning rate at `step` (0-based) of a run with steps_per_epoch and total_steps.
/// Throws ValueError for an unknown kind or invalid parameters.
double learning_rate(const ScheduleConfig& cfg, double base_lr, int64_t step,
                     int64_t steps_per_epoch, int64_t total_steps);

/// The schedule kinds learning_rate knows: constant, step, cosine.
const std::vector<std::string>& schedule_names();

}  // namespace dt
