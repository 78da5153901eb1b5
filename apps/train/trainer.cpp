// SPDX-License-Identifier: MIT
// The training loop of `detrain train` (contract in trainer.h). Reference for the recipe:
// Zhuang et al. 2021, "Randomness in neural network training" (Adam, lr 4e-4, batch 128).
#include "apps/train/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "apps/common/noise_flags.h"
#include "apps/train/batches_ahead.h"
#include "apps/train/checkpoint.h"
#include "apps/train/evaluation.h"
#include "apps/train/rank_agreement.h"
#include "apps/train/split_step.h"
#include "apps/train/train_data.h"
#include "apps/train/train_hooks.h"
#include "apps/train/trainer_noise.h"
#include "apps/train/trainer_trace.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "datasets/normalization.h"
#include "datasets/sampler.h"
#include "engine/autograd/tape.h"
#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/pending_item.h"
#include "engine/io/atomic_file.h"
#include "engine/ops/softmax_xent.h"
#include "engine/optim/clip.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "engine/runtime/collective.h"
#include "engine/runtime/isa.h"
#include "engine/runtime/threads.h"
#include "models/model_io.h"
#include "models/weights_hash.h"

namespace dt {

namespace {

using Clock = std::chrono::steady_clock;

/// Peak resident set size of this process (getrusage: Linux reports kilobytes); 0 if unknown.
int64_t peak_rss_bytes() {
    struct rusage u {};
    if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
    return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

LoaderConfig train_loader_config(const TrainRecipe& cfg, Normalization norm) {
    LoaderConfig lc;
    lc.batch_size = cfg.batch_size;
    lc.shuffle = cfg.shuffle_on();  // --seed-shuffle off: data-set order
    lc.shuffle_seed = cfg.shuffle_seed();
    // --seed-augment off: no augmentation, whatever --augment says.
    const bool crop = cfg.augment == "crop" || cfg.augment == "crop+flip";
    lc.augment.crop_padding = cfg.augment_on() && crop ? cfg.crop_padding : 0;
    lc.augment.hflip = cfg.augment_on() && (cfg.augment == "flip" || cfg.augment == "crop+flip");
    lc.augment.seed = cfg.augment_seed();
    lc.norm = std::move(norm);
    lc.drop_last = false;
    return lc;
}

OptimizerConfig optimizer_config(const TrainRecipe& cfg) {
    OptimizerConfig oc;
    oc.kind = cfg.optimizer;
    if (cfg.optimizer == "sgd") {  // momentum and nesterov mean nothing to adam/adamw
        oc.momentum = static_cast<float>(cfg.momentum);
        oc.nesterov = cfg.nesterov;
    }
    oc.weight_decay = static_cast<float>(cfg.weight_decay);
    return oc;
}

ScheduleConfig schedule_config(const TrainRecipe& cfg) {
    ScheduleConfig sc;
    sc.kind = cfg.schedule;
    sc.step_epochs = cfg.step_epochs;
    sc.gamma = cfg.gamma;
    sc.warmup_epochs = cfg.warmup_epochs;
    sc.min_lr = cfg.min_lr;
    return sc;
}

/// The model of --model for images shaped like `ds` on `device`, initialised there from
/// --seed-init (the same bits on every device), then --init-perturb applied. `perturb_note` says
/// what the perturbation changed.
std::unique_ptr<Model> make_initialised_model(const TrainRecipe& cfg, const Dataset& ds,
                                              Device device, std::string& perturb_note) {
    ModelConfig mc = model_config(cfg, ds.geometry());
    // --seed-dropout off: no dropout layer at all (dropout has no parameters, so the weights and
    // their canonical order are those of the model with dropout).
    mc.dropout = cfg.dropout_on() ? static_cast<float>(cfg.dropout) : 0.0f;
    std::unique_ptr<Model> model = make_model(mc);
    model->place_for_init(device);  // init writes every element
    model->init(cfg.init == "he" ? InitScheme::kHeUniform : InitScheme::kGlorotUniform,
                cfg.init_seed());
    if (!cfg.init_from.empty()) load_model_safetensors(*model, cfg.init_from);  // names checked
    if (cfg.noise.init_perturb) {
        perturb_note = perturb_initial_weight(*model, *cfg.noise.init_perturb);
    }
    return model;
}

TrainHooks& hooks_storage() {
    static TrainHooks hooks;
    return hooks;
}

/// What the training steps of a run use.
struct StepLoop {
    const TrainConfig& cfg;
    Model& model;
    Optimizer& optimizer;
    const BatchLoader& loader;
    const ScheduleConfig& schedule;
    Progress& progress;
    TrainPosition& pos;
    int64_t& last_checkpoint;  // global step of the last checkpoint in cfg.out (0: none)
    int64_t stop_at;    // --stop-after before the run's end: the step to stop after (0: none)
    BatchSplit* split;  // processes / micro-batches (split_step.h); null: whole batches
    bool& stopped;      // a hook ended the run (train_hooks.h)
};

/// A checkpoint at pos, unless the last one is there already (rank 0 writes).
void checkpoint_here(const StepLoop& L) {
    if (L.last_checkpoint == L.pos.global_step || world().rank() != 0) return;
    save_checkpoint(L.cfg, L.model, L.optimizer, L.pos);
    L.last_checkpoint = L.pos.global_step;
}

/// Batch b of epoch e as a whole-batch step takes it: the loader's, with the within-batch shuffle.
Batch training_batch(const StepLoop& L, int e, int64_t b) {
    Batch batch = L.loader.batch(static_cast<uint64_t>(e), b);
    const SourceSetting& within = L.cfg.noise.shuffle_within_batch;
    if (within.is_off()) return batch;
    return permute_rows(
        batch, within_batch_permutation(batch.size(), within.seed, static_cast<uint64_t>(e), b));
}

/// Whole batch b of epoch e (`batch`, training_batch's) at once: forward, loss, backward.
/// Returns the loss, which the caller checks before the update (a non-finite loss stops the run).
float whole_batch_step(const StepLoop& L, int e, int64_t b, Batch batch, int64_t& images) {
    const TrainConfig& cfg = L.cfg;
    trace_batch(batch);
    ForwardContext ctx;
    ctx.training = true;
    ctx.epoch = static_cast<uint64_t>(e);
    ctx.dropout_seed = cfg.dropout_seed();
    ctx.sample_ids = batch.sample_ids;
    // The batch is prepared on the host (as the CPU run's) and uploaded; the labels stay on the
    // host, where the loss checks them before it uploads them.
    const Device dev = L.model.device();
    Tensor loss = softmax_cross_entropy(L.model.forward(batch.images.to(dev), ctx), batch.labels);
    images = batch.size();
    // The loss is taken after the backward, whose finite check of the gradients is the step's one
    // wait for a device: read before it, the host would wait for the forward before it could
    // issue the backward (pending_item.h). A non-finite loss still ends the run as the loss's
    // divergence, also when the gradients it made non-finite are found first.
    PendingItem loss_value(loss);
    L.optimizer.zero_grad();
    try {
        backward_checked(loss, L.model, cfg.lr, e, b, L.loader.num_batches());
    } catch (const TrainingDiverged&) {
        if (const float v = loss_value.get(); !std::isfinite(v)) return v;
        throw;
    }
    return loss_value.get();
}

/// The remaining training steps of epoch pos.epoch, from batch pos.batch on; pos follows every
/// step. Writes a checkpoint after every cfg.checkpoint_every-th step of the run.
void train_epoch(const StepLoop& L) {
    const TrainConfig& cfg = L.cfg;
    TrainPosition& pos = L.pos;
    const int e = pos.epoch;
    const Clock::time_point start = Clock::now();
    const double seconds_before = pos.epoch_train_seconds;  // of a resumed epoch's first part
    const int64_t steps = L.loader.num_batches();
    // Whole batches on a device are made one ahead while the device works (batches_ahead.h).
    BatchesAhead batches(
        steps, [&L, e](int64_t b) { return training_batch(L, e, b); },
        L.split == nullptr && L.model.device() != Device::kCpu);
    for (int64_t b = pos.batch; b < steps; ++b) {
        int64_t images = 0;
        float loss_value = 0;
        trace_begin_step(e * steps + b);
        if (L.split != nullptr) {
            L.optimizer.zero_grad();
            loss_value = split_step(*L.split, cfg, L.loader, L.model, e, b, images);
        } else {
            loss_value = whole_batch_step(L, e, b, batches.take(b), images);
        }
        const int64_t step = e * steps + b;  // global, 0-based
        if (!std::isfinite(loss_value)) {
            autograd::clear_tape();
            throw TrainingDiverged(str("training diverged: the loss (op softmax_cross_entropy) is ",
                                       loss_value, " ", step_text(e, b, steps),
                                       "; try a smaller --lr (now ", cfg.lr, ")"));
        }
        if (cfg.clip_grad_norm > 0) {  // the whole batch's gradient: after the processes' sum
            trace_grad_norm(
                clip_grad_norm(L.model.trainable(), static_cast<float>(cfg.clip_grad_norm)));
        }
        trace_parameters(L.model, /*gradients=*/true);
        L.optimizer.step(
            static_cast<float>(learning_rate(L.schedule, cfg.lr, step, steps, steps * cfg.epochs)));
        trace_parameters(L.model, /*gradients=*/false);
        pos.epoch_loss_sum += loss_value;  // ORDER: batch order, in double
        pos.epoch_images += images;
        pos.batch = b + 1;
        ++pos.global_step;
        pos.epoch_train_seconds = seconds_before + seconds_since(start);
        L.progress.step(e + 1, b + 1, pos.epoch_loss_sum / static_cast<double>(b + 1),
                        static_cast<double>(pos.epoch_images) / pos.epoch_train_seconds);
        // One writer: rank 0 of a data-parallel run (every process holds the same state).
        if (cfg.checkpoint_every > 0 && pos.global_step % cfg.checkpoint_every == 0 &&
            world().rank() == 0) {
            save_checkpoint(cfg, L.model, L.optimizer, pos);
            L.last_checkpoint = pos.global_step;
        }
        if (cfg.max_steps > 0 && pos.global_step >= cfg.max_steps) return;  // an audit's steps
        if (pos.global_step == L.stop_at) {  // --stop-after: with a checkpoint to resume from
            checkpoint_here(L);
            return;
        }
        const TrainHooks& hooks = train_hooks();
        if (hooks.on_step &&
            hooks.on_step(
                StepEvent{e + 1, pos.global_step, steps * cfg.epochs,
                          pos.epoch_loss_sum / static_cast<double>(b + 1),
                          static_cast<double>(pos.epoch_images) / pos.epoch_train_seconds})) {
            io::prepare_output_dir(cfg.out);
            checkpoint_here(L);
            L.stopped = true;
            return;
        }
    }
}

/// The message of a diverged run, with where its last checkpoint is.
std::string with_checkpoint_note(const TrainConfig& cfg, int64_t last_checkpoint,
                                 const std::string& what) {
    if (cfg.checkpoint_every <= 0) return what;
    if (last_checkpoint == 0) return what + "; no checkpoint had been written yet";
    return str(what, "; the last good checkpoint (after global step ", last_checkpoint,
               ") is kept in ", checkpoint_path(cfg.out), " (resume it with --resume ", cfg.out,
               " --force and a smaller --lr)");
}

}  // namespace

TrainResult run_training(const TrainConfig& cfg, Progress& progress, const Checkpoint* resume) {
    const Clock::time_point run_start = Clock::now();
    TrainResult r;
    set_num_threads(cfg.threads);
    r.threads = num_threads();
    // --isa auto keeps the process default ($DT_ISA or the best path); validate_train_config has
    // checked that a named path is supported.
    if (cfg.isa != "auto") set_cpu_isa(cpu_isa_from_name(cfg.isa));
    r.isa = cpu_isa_name(cpu_isa());
    DT_CHECK(noise_config_resolved(cfg.noise),
             "run_training: the noise configuration is not resolved (call finalize_train_config)");
    // The implementation switches of this run, counters at 0; restored when the run ends.
    const ScopedReduceConfig reduce_config(reduce_site_specs(cfg.noise));
    const autograd::FiniteCheckGuard finite_check;
    const bool writer = world().rank() == 0;  // rank 0 writes and evaluates
    if ((cfg.checkpoint_every > 0 || cfg.stop_after > 0) && writer)
        io::prepare_output_dir(cfg.out);  // checkpoints

    const DatasetSplits data = load_splits(cfg, cfg.data_dir);
    if (world().size() > 1)  // every process trains on the same bytes
        check_same_on_every_rank("the data", data_fingerprint(data.train, data.test));
    const Normalization norm =
        cfg.normalize == "standard" ? channel_statistics(data.train) : Normalization{};
    const BatchLoader train_loader(data.train, train_loader_config(cfg, norm));
    const BatchLoader test_loader(data.test, eval_loader_config(cfg.eval_batch_size, norm));
    std::string perturb_note;
    r.device = cfg.device;
    r.model = make_initialised_model(cfg, data.train, device_from_name(cfg.device), perturb_note);
    trace_name_model(*r.model);
    const std::unique_ptr<Optimizer> optimizer =
        make_optimizer(optimizer_config(cfg), r.model->trainable());
    const ScheduleConfig schedule = schedule_config(cfg);

    r.class_names = data.train.class_names;
    r.info = RunInfo{data.train.size,
                     data.test.size,
                     data.train.channels,
                     data.train.height,
                     data.train.width,
                     data.train.num_classes,
                     train_loader.num_batches(),
                     r.model->num_trainable(),
                     perturb_note,
                     world().size(),
                     ""};
    r.num_parameters = r.info.num_parameters;
    r.processes = world().size();
    const AllreducePlan plan = allreduce_plan_of(cfg, train_loader, *r.model, r.processes);
    r.allreduce = plan.kind, r.allreduce_why = plan.why;
    r.info.allreduce = plan.why.empty() ? plan.kind : str(plan.kind, " (", plan.why, ")");
    // auto decides per host (cores, --threads): on only where it is on for every process, as
    // the bucket thread's collectives must match on all of them.
    const bool overlap =
        r.processes > 1 &&
        all_ranks(world(),
                  overlap_on(cfg.overlap, r.model->device() != Device::kCpu, cfg.threads,
                             default_thread_count(),
                             static_cast<int>(std::thread::hardware_concurrency()),
                             world().host_processes()));
    if (r.processes > 1)
        r.info.allreduce += str(", overlap ", overlap ? "on" : "off",
                                cfg.overlap == "auto" ? " (auto)" : "");
    progress.start(cfg, r.info);

    TrainPosition pos;
    if (resume) {
        restore_checkpoint(*resume, *r.model, *optimizer);
        pos = resume->position;
        DT_CHECK_VALUE(pos.epoch < cfg.epochs && pos.batch <= train_loader.num_batches(),
                       "--resume: the checkpoint is at epoch ", pos.epoch + 1, ", batch ",
                       pos.batch, ", beyond a run of ", cfg.epochs, " epochs of ",
                       train_loader.num_batches(), " batches");
        progress.note(str("resuming ", resume->path, " at epoch ", pos.epoch + 1, ", step ",
                          pos.batch + 1, " (global step ", pos.global_step + 1, ")"));
    }
    int64_t last_checkpoint = resume ? pos.global_step : 0;
    const int64_t run_steps = train_loader.num_batches() * cfg.epochs;
    DT_CHECK_VALUE(cfg.stop_after == 0 || cfg.stop_after > pos.global_step, "--stop-after ",
                   cfg.stop_after, ": the run is at global step ", pos.global_step,
                   " already (hint: give a later step, or leave --stop-after out to finish it)");
    const int64_t stop_at = cfg.stop_after < run_steps ? cfg.stop_after : 0;
    const int64_t steps_before = pos.global_step;
    // Processes of a data-parallel run and micro-batches split every batch (split_step.h).
    std::unique_ptr<BatchSplit> split;
    if (r.processes > 1 || cfg.micro_batch > 0) {
        check_split(train_loader, r.processes, cfg.micro_batch);
        split = std::make_unique<BatchSplit>(r.model->trainable(), world(), cfg.sync_bn == "on",
                                             overlap ? cfg.bucket_elements : 0);
    }
    bool stopped = false;
    const StepLoop loop{cfg, *r.model,        *optimizer, train_loader, schedule, progress,
                        pos, last_checkpoint, stop_at,    split.get(),  stopped};
    Evaluation ev;
    while (pos.epoch < cfg.epochs) {
        try {
            train_epoch(loop);
        } catch (const TrainingDiverged& d) {
            throw TrainingDiverged(with_checkpoint_note(cfg, last_checkpoint, d.what()));
        }
        if (stopped) {  // a hook ended the run: not finished, a checkpoint to resume from
            r.stopped_after = pos.global_step;
            return r;
        }
        if (cfg.max_steps > 0 && pos.global_step >= cfg.max_steps) break;  // no evaluation
        if (stop_at > 0 && pos.global_step == stop_at) {  // --stop-after: not finished
            r.stopped_after = stop_at;
            return r;
        }
        const int e = pos.epoch;
        progress.evaluating(e + 1);
        const Clock::time_point train_end = Clock::now();
        // Only the writer evaluates (the others' weights are the same bits).
        if (writer)
            ev = evaluate(*r.model, test_loader, data.test, static_cast<uint64_t>(e),
                          cfg.dropout_seed());
        EpochStats s;
        s.epoch = e + 1;
        s.train_loss = pos.epoch_loss_sum / static_cast<double>(train_loader.num_batches());
        s.test_accuracy = ev.accuracy;
        s.validation_loss = ev.loss;
        s.bits_per_byte = ev.loss / std::log(2.0);  // NaN for a classifier
        s.train_seconds = pos.epoch_train_seconds;
        s.seconds = pos.epoch_train_seconds + seconds_since(train_end);
        s.images_per_second = static_cast<double>(pos.epoch_images) / s.train_seconds;
        pos.train_seconds_all += pos.epoch_train_seconds;
        pos.train_images_all += pos.epoch_images;
        pos.history.push_back(s);
        pos.epoch = e + 1, pos.batch = 0;
        pos.epoch_loss_sum = 0, pos.epoch_images = 0, pos.epoch_train_seconds = 0;
        progress.epoch_end(s);
        if (train_hooks().on_epoch) train_hooks().on_epoch(s);
    }

    r.history = pos.history;
    r.final_train_loss = r.history.empty() ? 0.0 : r.history.back().train_loss;
    r.images_per_second = pos.train_seconds_all > 0
                              ? static_cast<double>(pos.train_images_all) / pos.train_seconds_all
                              : 0.0;
    if (split != nullptr && split->overlapping())
        r.gradient_buckets = static_cast<int64_t>(split->buckets());
    if (split != nullptr && pos.global_step > steps_before)  // this process's steps
        r.bytes_sent_per_step = static_cast<double>(split->bytes_sent()) /
                                static_cast<double>(pos.global_step - steps_before);
    r.test_accuracy = ev.accuracy;
    r.per_class_accuracy = std::move(ev.per_class);
    r.predictions = std::move(ev.predictions);
    r.test_logits = std::move(ev.logits);
    r.test_labels = r.model->rows_per_sample() > 1 ? std::move(ev.targets) : data.test.labels;
    r.weights_sha256 = weights_sha256(*r.model);
    r.wall_time_seconds = seconds_since(run_start);
    r.peak_rss_bytes = peak_rss_bytes();
    const DeviceMemory& mem = device_memory(r.model->device());
    if (r.model->device() != Device::kCpu && mem.peak_bytes != nullptr)
        r.device_peak_bytes = static_cast<int64_t>(mem.peak_bytes());
    return r;
}

void set_train_hooks(TrainHooks hooks) { hooks_storage() = std::move(hooks); }
const TrainHooks& train_hooks() { return hooks_storage(); }

}  // namespace dt
