// SPDX-License-Identifier: MIT
// What `detrain train` leaves in --out DIR (formats in docs/formats.md):
//   weights.safetensors  every parameter and buffer, canonical order, metadata with the config
//   predictions.csv      index,label,predicted  (one row per test example, data-set order)
//   test_logits.safetensors  "logits" (test size, classes) float32, data-set order (for studies:
//                        prediction correlation, ensembles)
//   result.json          configuration, history, final metrics, weights_sha256, timings
// Each file is written atomically (temporary file in DIR, fsync, rename), and result.json last,
// so its presence means the run finished and the other two files are complete.
#pragma once
#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "apps/train_config.h"
#include "apps/trainer.h"

namespace dt {

/// One line saying how weights_sha256 is computed (also stored in result.json).
extern const char* const kWeightsHashOrder;

/// Creates `dir` and its parents if needed and checks that a file can be created in it, so a
/// bad --out fails before training. Throws IoError naming the path and the errno text.
void prepare_output_dir(const std::string& dir);

/// Files written as a set: add() writes each to "<path>.tmp.<pid>" and fsyncs it, commit()
/// renames them into place in the order added. A failure while writing any (a full disk) throws
/// IoError naming the path and the errno text before a single file is replaced; temporaries not
/// committed are removed.
class FileSet {
 public:
    FileSet() = default;
    FileSet(const FileSet&) = delete;
    FileSet& operator=(const FileSet&) = delete;
    ~FileSet();
    void add(const std::string& path, const std::string& contents);
    void commit();

 private:
    std::vector<std::pair<std::string, std::string>> staged_;  // (temporary, path)
};

/// One file through FileSet: never leaves a partial `path` behind.
void write_file_atomic(const std::string& path, const std::string& contents);

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
