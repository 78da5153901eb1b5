// SPDX-License-Identifier: MIT
// Re-running a recorded recipe. --replay FILE (a result.json) and --resume DIR (a checkpoint) read
// the recipe of a run through one function, recorded_config(), which takes the recorded "config"
// and "noise" objects (random seeds as drawn) and only the run options from this command line
// (RunOptions, apps/train/train_config.h). --replay accepts nothing else; --resume also accepts
// recipe flags that repeat the run's values (apps/train/train_resume.h).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/train/train_config.h"

namespace dt {

/// The flags of RunOptions that may accompany a recorded recipe: --threads, --isa, --device,
/// --progress, --data-dir, --checkpoint-every, --out. None of them changes what is computed
/// (--threads and --device aside under atomic accumulation).
const std::vector<std::string>& run_option_flags();

/// The configuration recorded in `config` and `noise` (the objects of result.json, also in
/// checkpoints) with this command's run options: --progress always (how verbose this run is),
/// --threads, --isa, --device, --data-dir, --checkpoint-every and --out where `flags` holds them; the
/// record's own values otherwise. Not finalized. Throws ValueError "<source>: ..." for a record
/// that cannot be read.
TrainConfig recorded_config(const std::string& source, const nlohmann::json& config,
                            const nlohmann::json& noise, const TrainConfig& given,
                            const std::vector<std::string>& flags);

/// A result.json for --replay, parsed. Throws IoError (unreadable) or ValueError (not JSON).
nlohmann::json read_record(const std::string& path);

/// The configuration of --replay `path` (its parsed `record`): recorded_config, the recorded
/// weights_sha256, and --out defaulting to "<directory of path>-replay". Throws ValueError naming
/// a flag other than --replay and the run options, or a malformed record.
TrainConfig replay_config(const std::string& path, const nlohmann::json& record,
                          const TrainConfig& given, const std::vector<std::string>& flags);

/// Notes for the start of a replay: what it replays, a recipe that differs from this detrain's,
/// an atomic site (which cannot be replayed bit for bit).
std::vector<std::string> replay_notes(const TrainConfig& c, const nlohmann::json& record);

}  // namespace dt
