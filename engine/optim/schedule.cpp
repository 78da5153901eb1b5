// SPDX-License-Identifier: MIT
// Learning-rate schedules in double on the host. With s = step (0-based), S = steps_per_epoch,
// T = total_steps:
//   constant: lr
//   step:     e = floor(s / S) (whole epochs done; decays only at epoch boundaries),
//             k = floor(e / step_epochs);  ORDER: lr_k = (((lr * gamma) * gamma) ...) k times,
//             the chained form of torch.optim.lr_scheduler.StepLR stepped once per epoch.
//   cosine:   W = round(warmup_epochs * S) warm-up steps (llround; W <= T required)
//             s <  W: ORDER: lr * (s + 1) / W            (lr/W at s = 0, lr at s = W-1)
//             s >= W: progress = min(1, (s - W) / max(1, T - W))
//                     ORDER: min_lr + ((lr - min_lr) * (1 + cos(pi * progress))) / 2
//             (lr at s = W; min_lr is reached at s = T, one past the last step of the run).
#include "engine/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

namespace {

constexpr double kPi = 3.14159265358979323846;

double step_schedule(const ScheduleConfig& cfg, double base_lr, int64_t step,
                     int64_t steps_per_epoch) {
    DT_CHECK_VALUE(std::isfinite(cfg.step_epochs) && cfg.step_epochs > 0,
                   "schedule step:", " step_epochs must be > 0, got ", cfg.step_epochs,
                   " (hint: decay every 30 epochs is step_epochs = 30)");
    DT_CHECK_VALUE(std::isfinite(cfg.gamma) && cfg.gamma > 0, "schedule step: gamma must be",
                   " > 0, got ", cfg.gamma, " (hint: 0.1 divides the rate by 10 at each decay)");
    const int64_t epoch = step / steps_per_epoch;
    const auto k = static_cast<int64_t>(std::floor(static_cast<double>(epoch) / cfg.step_epochs));
    double lr = base_lr;
    for (int64_t i = 0; i < k; ++i) lr *= cfg.gamma;
    return lr;
}

double cosine_schedule(const ScheduleConfig& cfg, double base_lr, int64_t step,
                       int64_t steps_per_epoch, int64_t total_steps) {
    DT_CHECK_VALUE(total_steps >= 1, "schedule cosine: total_steps must be >= 1, got ",
                   total_steps);
    DT_CHECK_VALUE(std::isfinite(cfg.warmup_epochs) && cfg.warmup_epochs >= 0,
                   "schedule cosine: warmup_epochs must be >= 0, got ", cfg.warmup_epochs);
    DT_CHECK_VALUE(std::isfinite(cfg.min_lr) && cfg.min_lr >= 0 && cfg.min_lr <= base_lr,
                   "schedule cosine: min_lr must be in [0, lr] = [0, ", base_lr, "], got ",
                   cfg.min_lr, " (hint: 0 decays to zero)");
    const int64_t warmup = std::llround(cfg.warmup_epochs * static_cast<double>(steps_per_epoch));
    DT_CHECK_VALUE(warmup <= total_steps, "schedule cosine: warm-up of ", cfg.warmup_epochs,
                   " epochs = ", warmup, " steps exceeds the run's ", total_steps,
                   " steps (hint: shorten the warm-up or train longer)");
    if (step < warmup) {
        return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
    }
    const double span = static_cast<double>(std::max<int64_t>(1, total_steps - warmup));
    const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
    return cfg.min_lr + ((base_lr - cfg.min_lr) * (1.0 + std::cos(kPi * progress))) / 2.0;
}

}  // namespace

double learning_rate(const ScheduleConfig& cfg, double base_lr, int64_t step,
                     int64_t steps_per_epoch, int64_t total_steps) {
    DT_CHECK_VALUE(std::isfinite(base_lr) && base_lr >= 0, "schedule: learning rate must be a",
                   " finite value >= 0, got ", base_lr);
    DT_CHECK_VALUE(step >= 0, "schedule: step must be >= 0, got ", step);
    DT_CHECK_VALUE(steps_per_epoch >= 1, "schedule: steps_per_epoch must be >= 1, got ",
                   steps_per_epoch, " (hint: a data set smaller than one batch with drop_last?)");
    if (cfg.kind == "constant") return base_lr;
    if (cfg.kind == "step") return step_schedule(cfg, base_lr, step, steps_per_epoch);
    if (cfg.kind == "cosine") {
        return cosine_schedule(cfg, base_lr, step, steps_per_epoch, total_steps);
    }
    throw ValueError(str("unknown learning-rate schedule '", cfg.kind, "' (known: ",
                         join_text(schedule_names()), ")"));
}

const std::vector<std::string>& schedule_names() {
    static const std::vector<std::string> v = {"constant", "step", "cosine"};
    return v;
}

}  // namespace dt
