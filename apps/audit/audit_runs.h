// SPDX-License-Identifier: MIT
// The training runs of `detrain audit`: configurations built from train flags (run B's from run
// A's plus more), trained in memory for a few steps with the hash trail on
// (engine/autograd/trace.h), writing nothing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "engine/autograd/trace.h"

namespace dt {

struct TrailOptions {
    int64_t keep_step = -1, keep_index = -1;  // keep this entry's values (second pass)
    bool row_hashes = false;                  // per-sample row hashes (the matrix)
};

struct Trail {
    std::vector<autograd::TraceEntry> entries;  // empty when values were kept instead
    std::vector<float> kept;
    TrainResult result;  // the trained model and the run's facts
};

/// Trains `cfg` (its max_steps set) with a trace sink current.
Trail run_traced(const TrainConfig& cfg, const TrailOptions& options = {});

/// Run A's and B's configurations from their flags: `random` seeds drawn once for both,
/// `steps` training steps each, no checkpoints, no progress. Flags that write files or continue
/// runs (--out, --resume, --replay, --checkpoint-every, --stop-after, --trace) are refused.
std::pair<TrainConfig, TrainConfig> audit_configs(const std::vector<std::string>& a_flags,
                                                  const std::vector<std::string>& b_flags,
                                                  int64_t steps);

std::vector<std::string> split_words(const std::string& s);
std::string join_words(const std::vector<std::string>& v);

}  // namespace dt
