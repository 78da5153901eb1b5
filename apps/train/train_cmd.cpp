// SPDX-License-Identifier: MIT
// Glue of `detrain train`: flags (or --replay FILE) -> TrainConfig -> run_training -> files in
// --out.
#include "apps/train/train_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/audit/trace_file.h"
#include "apps/common/version.h"
#include "apps/train/checkpoint.h"
#include "apps/train/progress.h"
#include "apps/train/rank_agreement.h"
#include "apps/train/run_outputs.h"
#include "apps/train/train_config.h"
#include "apps/train/train_data.h"
#include "apps/train/train_record.h"
#include "apps/train/train_resume.h"
#include "apps/train/trainer.h"
#include "engine/core/error.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors.h"
#include "engine/runtime/collective.h"
#include "models/model_io.h"

namespace dt {

namespace {

/// The long names ("--lr") of the options given on the command line of `app`.
std::vector<std::string> given_flags(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options()) {
        if (o->count() > 0) names.push_back(o->get_name());
    }
    return names;
}

/// --init-from's file against the model the run builds (names, dtypes, shapes), before the
/// run writes anything; the trainer loads it after --init.
void check_init_from(const TrainConfig& cfg) {
    if (cfg.init_from.empty()) return;
    const std::unique_ptr<Model> model =
        make_model(model_config(cfg, dataset_geometry(cfg.dataset)));
    check_model_params(*model, io::load_safetensors(cfg.init_from), cfg.init_from);
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainConfig& cfg) {
    CLI::App* train = app.add_subcommand(
        "train",
        "Train an image classifier, or a language model on a text (--model gpt), and write "
        "result.json, predictions.csv and weights.safetensors into --out");
    train->footer(
        "Defaults follow Zhuang et al. 2021: Adam, lr 4e-4, batch 128, Glorot-uniform init, "
        "inputs in [0,1].\nThe same flags and seeds give bitwise identical weights on any "
        "--threads (except with atomic accumulation).\nmpirun -np P detrain train trains on P "
        "processes "
        "with the same global batch (under --impl exact: the same weights for any P; "
        "docs/distributed.md).\nNoise switches: docs/noise.md. "
        "Precedence: --noise preset < --seed < --seed-<source>; --noise < --impl < --impl-site.");
    add_train_flags(*train, cfg);
    return train;
}

int run_train_command(const CLI::App& train, TrainConfig& cfg,
                      const std::vector<std::string>& command_line) {
    std::vector<std::string> notes, notices;  // notices show with --progress none too
    std::optional<Checkpoint> checkpoint;
    bool finalized = false;  // resume_config finalizes what it returns
    if (!cfg.resume.empty()) {
        DT_CHECK_VALUE(cfg.replay.empty(),
                       "--resume and --replay cannot be combined: --replay "
                       "starts a run anew, --resume continues one");
        std::vector<std::string> forced;  // differences refused unless --force
        if (resume_has_checkpoint(cfg.resume)) {
            checkpoint = read_checkpoint(cfg.resume);
            cfg = resume_config(*checkpoint, cfg, given_flags(train), &forced);
            finalized = true;
        } else if (const std::optional<RecordedRun> plan = read_run_plan(cfg.resume)) {
            // Stopped before its first checkpoint: the plan starts it anew.
            notices.push_back(plan_restart_note(cfg.resume));
            cfg = resume_config(*plan, cfg, given_flags(train), &forced);
            finalized = true;
        } else {  // no plan either: the run's flags, given again, start it anew
            cfg = restart_config(cfg, given_flags(train));
            notices.push_back(restart_note(cfg.resume));
        }
        for (const std::string& d : forced) notes.push_back("--force: " + d);
    } else if (!cfg.replay.empty()) {
        const nlohmann::json record = read_record(cfg.replay);
        cfg = replay_config(cfg.replay, record, cfg, given_flags(train));
        notes = replay_notes(cfg, record);
    }
    if (!finalized) finalize_train_config(cfg, rank0_entropy);  // `random`: rank 0's draws
    check_same_on_every_rank("the run", run_fingerprint(cfg));
    check_text_corpus(cfg, cfg.data_dir);  // a bad corpus fails before anything is written
    check_init_from(cfg);                  // so does a weights file of another model
    // A data-parallel run (mpirun -np P): every process trains, rank 0 alone reports and writes.
    const bool writer = world().rank() == 0;
    if (writer) {
        io::prepare_output_dir(cfg.out);    // an unusable --out fails now, not after training
        write_run_plan(cfg, command_line);  // before the first step: --resume DIR alone restarts
    }
    Progress progress(Progress::parse_mode(writer ? cfg.progress : "none", stderr), stderr);
    for (const std::string& n : notices) progress.notice(n);
    for (const std::string& n : notes) progress.note(n);
    // --trace: the hash trail streamed to FILE while training (rank 0's).
    std::optional<TraceWriter> trace_file;
    autograd::TraceSink trace;
    std::optional<autograd::ScopedTrace> tracing;
    if (!cfg.trace.empty() && writer) {
        trace_file.emplace(cfg.trace,
                           nlohmann::json{{"detrain_trace", 1},
                                          {"detrain_version", version_string()},
                                          {"command_line", command_line},
                                          {"config", nlohmann::json::parse(to_json(cfg).dump())}});
        trace.on_entry([&](const autograd::TraceEntry& e) { trace_file->write(e); },
                       /*store=*/false);
        tracing.emplace(trace);
    }
    TrainResult result = run_training(cfg, progress, checkpoint ? &*checkpoint : nullptr);
    tracing.reset();
    trace_file.reset();
    if (!writer) return 0;
    if (result.stopped_after > 0) {  // --stop-after: a checkpoint, no results yet
        std::printf(
            "stopped         after global step %lld of %lld; checkpoint %s\n"
            "continue with   detrain train --resume %s\n",
            static_cast<long long>(result.stopped_after),
            static_cast<long long>(result.info.steps_per_epoch * cfg.epochs),
            checkpoint_path(cfg.out).c_str(), cfg.out.c_str());
        return 0;
    }
    const RunFiles files = write_run_outputs(cfg, result, command_line);
    print_summary(stdout, result, files);
    if (!cfg.replay.empty()) {
        const bool same = result.weights_sha256 == cfg.replay_of_sha256;
        std::printf("replay          %s the recorded weights_sha256 of %s\n",
                    same ? "matches" : "DIFFERS FROM", cfg.replay.c_str());
    }
    return 0;
}

}  // namespace dt
