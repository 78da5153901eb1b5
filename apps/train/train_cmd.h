// SPDX-License-Identifier: MIT
// `detrain train`: registration of the subcommand and its run (apps/train/train_cmd.cpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

namespace dt {

struct TrainConfig;

/// Adds the `train` subcommand with every flag of TrainConfig (written into `cfg`).
CLI::App* add_train_command(CLI::App& app, TrainConfig& cfg);

/// Runs a parsed `train` (`train` is the subcommand, for the flags given): --replay, finalizes
/// cfg, checks --out, trains, writes the files, prints the summary to stdout. `command_line` is
/// argv, recorded in result.json. Throws dt::Error.
int run_train_command(const CLI::App& train, TrainConfig& cfg,
                      const std::vector<std::string>& command_line);

}  // namespace dt
