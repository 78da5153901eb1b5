// SPDX-License-Identifier: MIT
// What `detrain train` leaves in --out DIR (formats in docs/formats.md):
//   weights.safetensors  every parameter and buffer, canonical order, metadata with the config
//   predictions.csv      index,label,predicted  (one row per test example, data-set order)
//   test_logits.safetensors  "logits" (test size, classes) float32, data-set order (for studies:
//                        prediction correlation, ensembles)
//   result.json          configuration, history, final metrics, weights_sha256, timings
// The four files are written as one io::AtomicFileSet (engine/io/atomic_file.h): every file
// complete before any is replaced, result.json last, so its presence means the run finished and
// the other files are complete.
#pragma once
#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "apps/train/train_config.h"
#include "apps/train/trainer.h"

namespace dt {

/// One line saying how weights_sha256 is computed (also stored in result.json).
extern const char* const kWeightsHashOrder;

/// "index,label,predicted\n" + one row per test example.
std::string predictions_csv(const TrainResult& r);

/// The result.json document. `command_line` is argv as given.
nlohmann::ordered_json result_json(const TrainConfig& cfg, const TrainResult& r,
                                   const std::vector<std::string>& command_line);

/// Paths of the files written by write_run_outputs.
struct RunFiles {
    std::string result_json, predictions_csv, weights, test_logits;
};

/// Writes the three files into cfg.out (weights, predictions, then result.json).
RunFiles write_run_outputs(const TrainConfig& cfg, const TrainResult& r,
                           const std::vector<std::string>& command_line);

/// A few lines for the end of a run: test accuracy, weights hash, where the files are.
void print_summary(std::FILE* out, const TrainResult& r, const RunFiles& files);

}  // namespace dt
