// SPDX-License-Identifier: MIT
// The run plan of `detrain train`: DIR/run_plan.json, the run's resolved configuration, written
// atomically into --out before the first step (and again at every start, so that a run resumed
// with --force plans what it computes). With it, `detrain train --resume DIR` alone restarts a
// run killed at any moment: from its checkpoint when there is one, else from the beginning of
// the plan. Format (docs/formats.md): {"format": "detrain-run-plan", "format_version": 1,
// "detrain_version", "recipe", "command_line", "config", "noise"}; config and noise are
// result.json's blocks, every random seed as drawn.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/train/train_config.h"

namespace dt {

/// A run's recorded recipe: its "config" and "noise" objects and the file they came from (a
/// run plan or a checkpoint).
struct RecordedRun {
    std::string path;
    nlohmann::json config;  // result.json-style "config" object
    nlohmann::json noise;   // result.json-style "noise" object
};

/// DIR/run_plan.json.
std::string run_plan_path(const std::string& dir);

/// Writes cfg.out's run plan atomically (the previous one stays until the new one is complete).
/// Throws IoError naming the file.
void write_run_plan(const TrainConfig& cfg, const std::vector<std::string>& command_line);

/// DIR's run plan; nullopt when DIR holds none. Throws IoError naming the file when it cannot be
/// read, is not a run plan, or was written for another training recipe.
std::optional<RecordedRun> read_run_plan(const std::string& dir);

}  // namespace dt
