// SPDX-License-Identifier: MIT
// run_training: the training loop of `detrain train`, reusable by other subcommands.
// Per step: forward (training mode) -> softmax_cross_entropy -> zero_grad -> backward ->
// lr = schedule(step) -> optimizer step. After each epoch: evaluation on the test split under
// NoGradGuard (training = false). Every random choice is keyed by a seed of TrainConfig (init,
// shuffle, augment, dropout), never by time or thread, so the final weights are a function of the
// configuration alone (not of --threads, unless a reduce site is `atomic`).
// Data preparation is datasets/' (the trainer only turns flags into calls): --limit-train,
// --limit-test and --imbalance cut the loaded splits (datasets/subset.h), --normalize standard
// uses channel_statistics of the training split (datasets/normalization.h).
// Noise switches (cfg.noise, docs/noise.md): the reduce-site registry gets the run's specs with
// counters at 0 (restored on return); shuffle off -> data-set order; augment off -> none; dropout
// off -> no dropout layers; --init-perturb after init; --shuffle-within-batch permutes the rows of
// every training batch (within_batch_permutation, permute_rows: datasets/sampler.h, loader.h);
// the tape's finite check is on, so a NaN/Inf gradient stops the run.
// Checkpoints and resume: apps/train/checkpoint.h; a resumed run continues bit for bit (every
// random stream is keyed by seed and position, the rest of the state is in the checkpoint).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/train/progress.h"
#include "apps/train/train_config.h"
#include "models/model.h"

namespace dt {

struct TrainResult {
    // ---- data ----
    RunInfo info;                          // sizes, image shape, steps per epoch, parameters
    std::vector<std::string> class_names;  // label order

    // ---- training ----
    std::vector<EpochStats> history;  // one entry per epoch
    double final_train_loss = 0;      // history.back().train_loss
    double images_per_second = 0;     // training images / training seconds, all epochs
    double wall_time_seconds = 0;     // whole run_training call (loading, training, evaluation)
    int64_t peak_rss_bytes = 0;       // the process's peak resident memory at the end of training
    int64_t device_peak_bytes = -1;   // the most memory the process held on the device (-1: cpu)
    // --stop-after: the global step this invocation stopped after, its checkpoint in --out; the
    // run is not finished (no final evaluation: the fields below are empty). 0: finished.
    int64_t stopped_after = 0;
    int threads = 0;
    std::string isa;                       // GEMM instruction set used: scalar | avx2 | avx512
    std::string device;                    // where it trained: cpu | cuda
    int processes = 1;                     // of a data-parallel run (mpirun -np P)
    std::string allreduce, allreduce_why;  // engine/runtime/allreduce_plan.h
    double bytes_sent_per_step = 0;        // a process's payload to collectives (0: no split)
    int64_t gradient_buckets = 0;  // sent during the backward (--overlap on, P > 1); 0: after it

    // ---- final evaluation (test split, data-set order) ----
    double test_accuracy = 0;                // fraction in [0, 1]
    std::vector<double> per_class_accuracy;  // aligned with class_names; NaN: no test example
    std::vector<int32_t> test_labels;        // label of test example i
    std::vector<int64_t> predictions;        // argmax of the logits of test example i
    std::vector<float> test_logits;          // (test size, classes): logits of test example i

    // ---- weights ----
    std::unique_ptr<Model> model;
    std::string weights_sha256;  // io::weights_sha256 over model->trainable(), canonical order
    int64_t num_parameters = 0;  // trainable elements
};

struct Checkpoint;

/// Trains as `cfg` says (cfg must have passed finalize_train_config), from the start or from
/// `resume` (a checkpoint of a run with this configuration: the model, optimizer and reduce-site
/// counters are restored, training goes on at its position). With cfg.checkpoint_every = N > 0
/// a checkpoint is written after every N-th step (apps/train/checkpoint.h). Throws dt::IoError for
/// unreadable data or a failed checkpoint write, dt::ValueError for invalid combinations (e.g.
/// an --init-perturb name the model lacks, an --imbalance class the data set lacks),
/// TrainingDiverged (apps/train/trainer_noise.h) when the training loss or a gradient becomes
/// non-finite (naming epoch, step, the op and the tensor, and the last checkpoint kept).
TrainResult run_training(const TrainConfig& cfg, Progress& progress,
                         const Checkpoint* resume = nullptr);

/// While on, run_training keeps the last data set it read in memory and reuses it when the next
/// run reads the same data set from the same directory (`detrain audit` trains hundreds of short
/// runs; a process does not see its data files change under it). Off (the default) frees it.
void keep_loaded_dataset(bool on);

}  // namespace dt
