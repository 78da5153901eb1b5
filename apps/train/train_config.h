// SPDX-License-Identifier: MIT
// TrainConfig: every flag of `detrain train`, with the defaults of Zhuang et al. 2021 (Adam, lr
// 4e-4, batch 128, Glorot-uniform init, inputs scaled to [0, 1]), split into the recipe (what
// decides the bits) and the run options (how the run is carried out). The flag names are a public
// interface (scripts, result.json "config"). Flow: add_train_flags() registers the flags on a CLI11
// app, parsing fills the struct, finalize_train_config() resolves the derived defaults (noise
// switches and seeds, data dir, output dir) and validates; invalid values throw dt::ValueError
// naming the flag, the value given and the valid range (malformed noise flags already fail at
// parsing, as CLI11 errors with the same text).
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/noise_flags.h"
#include "datasets/dataset.h"
#include "models/model.h"

namespace CLI {
class App;
}

namespace dt {

/// All logical cores (omp_get_num_procs()), the default of --threads.
int default_thread_count();

/// The recipe: everything that decides the bits of a run's weights. Recorded in result.json
/// ("config" and "noise") and in checkpoints; --resume requires the same, --replay re-runs it.
/// The same recipe (and recipe version, apps/common/version.h) gives the same weights_sha256 on any
/// x86-64 machine, thread count and instruction set (docs/noise.md).
struct TrainRecipe {
    // ---- model ----
    std::string model = "smallcnn";  // one of model_names() (models/model.h)
    int kernel_size = 3;             // mediumcnn only: 1, 3, 5 or 7
    std::string init = "glorot";     // glorot | he
    std::string init_from;           // --init-from FILE.safetensors: start from these weights
    double dropout = 0.0;            // in [0, 1)
    // gpt only (models/gpt.h): blocks, heads, features per token, tokens per sequence.
    int layers = 4;
    int heads = 4;
    int width = 128;
    int context = 128;

    // ---- data (which files: RunOptions::data_dir) ----
    // One of dataset_names() (datasets/dataset.h); --model gpt sets text unless --dataset follows.
    std::string dataset = "fashion-mnist";
    std::string augment = "none";  // none | crop | flip | crop+flip
    int crop_padding = 4;
    std::string normalize = "unit";  // unit: x/255; standard: per-channel mean/std of train split
    int64_t limit_train = 0;         // first N examples; 0 = all
    int64_t limit_test = 0;
    // --imbalance CLASS:FRACTION: keep only the first ceil(FRACTION x count) training examples of
    // CLASS (data-set order), after --limit-train; "" = balanced. Studies of under-represented
    // classes (issue 4).
    std::string imbalance;
    int imbalance_class() const;        // -1 when balanced
    double imbalance_fraction() const;  // 1 when balanced

    // ---- optimisation ----
    int epochs = 10;
    int batch_size = 128;
    int eval_batch_size = 1000;
    double lr = 4e-4;
    std::string optimizer = "adam";  // one of optimizer_names() (engine/optim/optimizer.h)
    double momentum = 0.9;           // sgd only
    bool nesterov = false;           // sgd only
    double weight_decay = 0.0;
    double clip_grad_norm = 0.0;        // 0: off; else the gradients' global norm limit
    std::string schedule = "constant";  // one of schedule_names() (engine/optim/schedule.h)
    double step_epochs = 30;            // step
    double gamma = 0.1;                 // step
    double warmup_epochs = 0;           // cosine
    double min_lr = 0;                  // cosine

    // ---- noise (apps/common/noise_flags.h, docs/noise.md) ----
    // --noise, --seed, --seed-<source>, --no-shuffle, --init-perturb, --impl, --impl-site,
    // --shuffle-within-batch as typed; finalize_train_config resolves them into `noise`.
    NoiseFlags noise_flags;
    NoiseConfig noise;               // every noise switch, resolved: random seeds drawn
    bool noise_from_record = false;  // `noise` was loaded from a record: do not re-derive

    // Seeds in effect (valid after finalize_train_config; 0 for a source that is off).
    uint64_t init_seed() const { return noise.init.seed; }
    uint64_t shuffle_seed() const { return noise.shuffle.seed; }
    uint64_t augment_seed() const { return noise.augment.seed; }
    uint64_t dropout_seed() const { return noise.dropout.seed; }
    bool shuffle_on() const { return !noise.shuffle.is_off(); }
    bool augment_on() const { return !noise.augment.is_off() && augment != "none"; }
    bool dropout_on() const { return !noise.dropout.is_off() && dropout > 0; }
};

/// The run options: how a run is carried out (where its data and files are, how fast, how
/// verbosely, when it checkpoints), never which bits it computes (--threads aside under atomic
/// accumulation). A replayed or resumed run takes them from its command line
/// (run_option_flags(), apps/train/train_record.h).
struct RunOptions {
    int threads = default_thread_count();
    // CPU instruction set of the GEMM and convolution kernels: auto (DT_ISA if set, else the best
    // this CPU has) | scalar | avx2 | avx512 (engine/runtime/isa.h).
    std::string isa = "auto";
    // Where tensors live and kernels run: cpu | cuda (engine/runtime/cuda_device.h). Under the
    // deterministic modes the bits do not depend on it (docs/gpu.md).
    std::string device = "cpu";
    // Split every batch into micro-batches of at most this many samples per process, their
    // gradients accumulated (apps/train/split_step.h); 0: whole batches. Under exact
    // accumulation (without batch norm) the weights do not depend on it.
    int64_t micro_batch = 0;
    // Batch norm in a data-parallel run (mpirun -np P): on = statistics over every process's
    // part of the batch (the single-process bits under exact), off = each process its own part.
    std::string sync_bn = "on";
    // Gradients of a data-parallel run: on = exchanged in buckets of bucket_elements while the
    // backward runs (engine/runtime/grad_buckets.h), off = all at once after it, auto = on
    // where the communication thread has a core of its own (overlap_on, split_step.h). The
    // bits do not depend on either.
    std::string overlap = "auto";
    int64_t bucket_elements = int64_t{1} << 20;
    std::string progress = "auto";  // auto | bar | plain | none
    std::string data_dir;  // "" -> default_data_dir(dataset); text: the corpus (--data-file)
    std::string out;       // "" -> runs/<model>-<dataset>
    int64_t checkpoint_every = 0;  // write --out/checkpoint.safetensors every N steps; 0 = never
    std::string trace;             // --trace FILE: the per-op hash trail (apps/audit/trace_file.h)
    // --stop-after N: end this invocation after global step N with a checkpoint, before the end
    // of the run (0: run to the end). Not recorded: a resumed run goes on unless given it again.
    int64_t stop_after = 0;
    // Stop after this many global steps, without the evaluation of the unfinished epoch (0: the
    // whole run). Not a flag: `detrain audit --steps N` sets it.
    int64_t max_steps = 0;

    // ---- what this command does with a record ----
    std::string replay;            // --replay FILE: re-run the recipe a result.json records
    std::string replay_of_sha256;  // --replay: the recorded weights_sha256
    std::string resume;            // --resume DIR: continue the run checkpointed in DIR
    bool force = false;            // --force: resume even with flags that differ from the run's
};

/// Every flag of `detrain train`: the recipe and the run options.
struct TrainConfig : TrainRecipe, RunOptions {};

/// Accepted values of the enumerated flags (also used in --help and error messages). The others
/// come from the floor that knows them: --model model_names() (models/model.h), --dataset
/// dataset_names() (datasets/dataset.h), --optimizer optimizer_names() (engine/optim/optimizer.h),
/// --schedule schedule_names() (engine/optim/schedule.h).
const std::vector<std::string>& init_names();
const std::vector<std::string>& augment_names();
const std::vector<std::string>& normalize_names();
const std::vector<std::string>& progress_names();
const std::vector<std::string>& isa_names();     // auto, scalar, avx2, avx512
const std::vector<std::string>& device_names();  // cpu, cuda

/// The ModelConfig of the recipe's --model for data of geometry `g` (image shape and classes;
/// gpt: --layers, --heads, --width, --context), without dropout, which the trainer sets from
/// the noise switches. The one place the flags become a model's shape.
ModelConfig model_config(const TrainRecipe& cfg, const DatasetGeometry& g);

/// The recipe of `--model gpt` where its flags are not given (a transformer's usual training:
/// the text corpus, small batches, AdamW, cosine decay after a warm-up), as flags, and applied.
extern const char* const kGptDefaults;
void apply_gpt_defaults(TrainRecipe& cfg);

/// Registers every flag of `detrain train` on `app`, writing into `cfg` (which must outlive the
/// parse). Defaults shown in --help are the current values of `cfg`.
void add_train_flags(CLI::App& app, TrainConfig& cfg);
/// " (a|b|c)": a flag's values for its --help text.
std::string flag_choices(const std::vector<std::string>& values);
/// The run options' flags of add_train_flags (train_run_flags.cpp).
void add_run_option_flags(CLI::App& app, RunOptions& cfg);

/// The flags of `detrain train` given as a list (by `detrain study` and `detrain audit`), parsed
/// and validated as train would, not finalized; a parse error is a ValueError prefixed by `who`.
TrainConfig parse_train_flag_list(const std::vector<std::string>& flags, const std::string& who);

/// Validates every field; throws dt::ValueError naming the flag, the value and the valid range.
void validate_train_config(const TrainConfig& cfg);

/// Validates, builds `noise` from `noise_flags` (unless noise_from_record) and draws its random
/// seeds, fills derived defaults (data_dir, out). Call once after parsing, at the start of a run.
void finalize_train_config(TrainConfig& cfg);
/// The same, drawing `random` seeds from `entropy` (two configurations that must draw the same
/// seeds, as the runs of `detrain audit`, share one sequence of draws).
void finalize_train_config(TrainConfig& cfg, const EntropyFn& entropy);

/// Every field, with the resolved seeds, under the flag names (without "--"), in flag order
/// (apps/train/train_config_json.cpp). Seeds are numbers, or "off"; "seed" is --seed as typed (a
/// number, "random", or null when not given).
nlohmann::ordered_json to_json(const TrainConfig& cfg);

/// The non-noise fields of a result.json "config" object (the inverse of to_json for them);
/// noise settings come from the "noise" block. Throws ValueError naming a missing or bad key.
TrainConfig train_config_from_json(const nlohmann::json& config);

}  // namespace dt
