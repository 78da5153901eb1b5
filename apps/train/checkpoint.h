// SPDX-License-Identifier: MIT
// Checkpoints of `detrain train` (--checkpoint-every N, --resume DIR): one safetensors file,
// DIR/checkpoint.safetensors, written atomically (io::save_safetensors: temporary file, fsync,
// rename), so the previous checkpoint stays valid until the new one is complete. Contents
// (docs/formats.md):
//   tensors   "model.<name>"     every model parameter and batch-norm running statistic
//             "optim.<name>"     Optimizer::state(): step counters, moments, momentum buffers
//             "run.reduce_calls" I64 [sites]: calls of each reduce site so far (the keys of
//                                permuted orders continue from there)
//   metadata  format, format_version, detrain_version; config and noise (result.json's blocks,
//             with every drawn seed); the position (epoch, batch, global_step) and the running
//             totals (epoch loss sum as a hex float, history of finished epochs); checksum.
// The random streams need no state of their own: every one is counter-based, keyed by its seed
// (in noise) and by (epoch, batch or sample), so (epoch, batch) is their position. The checksum
// is SHA-256 over the file's bytes as written without the checksum key (re-encoded on reading),
// so any flipped bit in names, shapes, values or metadata is caught.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/train/progress.h"
#include "apps/train/run_plan.h"
#include "apps/train/train_config.h"
#include "engine/io/safetensors.h"
#include "engine/optim/optimizer.h"
#include "models/model.h"

namespace dt {

/// Where a run stands between two steps, with the totals it carries.
struct TrainPosition {
    int epoch = 0;                    // 0-based epoch of the next step
    int64_t batch = 0;                // next batch of that epoch; == steps per epoch: the
                                      // epoch's steps are done, its evaluation is not
    int64_t global_step = 0;          // training steps done
    double epoch_loss_sum = 0;        // ORDER: batch losses of the epoch so far, in batch order
    int64_t epoch_images = 0;         // training images of the epoch so far
    double epoch_train_seconds = 0;   // their training time (wall clock: not reproducible)
    double train_seconds_all = 0;     // finished epochs' training time
    int64_t train_images_all = 0;     // finished epochs' training images
    std::vector<EpochStats> history;  // finished epochs
};

/// DIR/checkpoint.safetensors.
std::string checkpoint_path(const std::string& dir);

/// Writes the checkpoint of `cfg.out` (throws IoError naming the file on any failure; the
/// previous checkpoint is then still in place).
void save_checkpoint(const TrainConfig& cfg, const Model& model, Optimizer& optimizer,
                     const TrainPosition& pos);

/// A verified checkpoint file: the run's recipe (path, config, noise), where it stands, and its
/// tensors.
struct Checkpoint : RecordedRun {
    TrainPosition position;
    io::SafetensorsFile file;
};

/// Reads DIR's checkpoint and verifies format and checksum. Throws IoError naming the file and
/// the fault (missing, truncated, corrupt: checksum mismatch, other format or version, bad
/// metadata), with a hint.
Checkpoint read_checkpoint(const std::string& dir);

/// Copies the model's parameters and statistics, the optimizer state and the reduce-site call
/// counters from `ck`. Every name, shape and dtype is checked first (IoError / ShapeError
/// naming the tensor); nothing is changed unless all match.
void restore_checkpoint(const Checkpoint& ck, Model& model, Optimizer& optimizer);

}  // namespace dt
