// SPDX-License-Identifier: MIT
// `detrain train`: registration of the subcommand and its run (apps/train_cmd.cpp).
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

/// Flags that may accompany --replay (they change where and how verbosely a run happens, not
/// what it computes; --threads changes nothing except in `atomic` mode).
const std::vector<std::string>& replay_compatible_flags();

/// The configuration a result.json records (`record`, read from `path`), for --replay: every
/// flag as recorded and the resolved "noise" block (random seeds as drawn). From `given` it takes
/// only the flags in `given_flags` that replay_compatible_flags() allows; --out defaults to
/// "<directory of path>-replay". Throws ValueError naming a refused flag or a malformed record.
TrainConfig replay_config(const std::string& path, const nlohmann::json& record,
                          const TrainConfig& given, const std::vector<std::string>& given_flags);

/// Runs a parsed `train` (`train` is the subcommand, for the flags given): --replay, finalizes
/// cfg, checks --out, trains, writes the files, prints the summary to stdout. `command_line` is
/// argv, recorded in result.json. Throws dt::Error.
int run_train_command(const CLI::App& train, TrainConfig& cfg,
                      const std::vector<std::string>& command_line);

}  // namespace dt
