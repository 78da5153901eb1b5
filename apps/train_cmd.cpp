// SPDX-License-Identifier: MIT
// Glue of `detrain train`: flags (or --replay FILE) -> TrainConfig -> run_training -> files in
// --out.
#include "apps/train_cmd.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/checkpoint.h"
#include "apps/progress.h"
#include "apps/run_outputs.h"
#include "apps/train_config.h"
#include "apps/train_resume.h"
#include "apps/trainer.h"
#include "apps/version.h"
#include "engine/core/error.h"
#include "engine/core/text.h"
#include "engine/io/atomic_file.h"

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

nlohmann::json read_record(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw IoError(str("--replay: cannot read ", path));
    std::ostringstream text;
    text << f.rdbuf();
    try {
        return nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw ValueError(str("--replay: ", path, " is not JSON (", e.what(),
                             "); expected the result.json of a detrain run"));
    }
}

/// Notes for the start of a replay: what cannot be replayed bit for bit, version differences.
std::vector<std::string> replay_notes(const TrainConfig& c, const nlohmann::json& record) {
    std::vector<std::string> notes;
    notes.push_back(str("replay of ", c.replay, " (recorded weights_sha256 ",
                        c.replay_of_sha256.empty() ? "?" : c.replay_of_sha256, ")"));
    // Records from before the recipe was recorded are recipe 1 (the first numbered one).
    const int recipe = record.value("recipe", 1);
    if (recipe != kRecipeVersion) {
        notes.push_back(str("note: recorded under training recipe ", recipe, ", replayed under "
                            "recipe ", kRecipeVersion, " (detrain ", version_string(),
                            "): the recipes compute differently, so the weights will differ "
                            "from the record"));
    }
    for (ReduceSite s : all_reduce_sites()) {
        if (c.noise.sites[static_cast<std::size_t>(s)].mode == AccumMode::kAtomic) {
            notes.push_back(str("note: ", reduce_site_name(s),
                                " uses atomic accumulation, which is nondeterministic: the "
                                "replay's weights may differ from the record"));
            break;
        }
    }
    return notes;
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainConfig& cfg) {
    CLI::App* train = app.add_subcommand(
        "train",
        "Train a model on an image classification data set and write result.json, "
        "predictions.csv and weights.safetensors into --out");
    train->footer(
        "Defaults follow Zhuang et al. 2021: Adam, lr 4e-4, batch 128, Glorot-uniform init, "
        "inputs in [0,1].\nThe same flags and seeds give bitwise identical weights on any "
        "--threads (except with atomic accumulation).\nNoise switches: docs/noise.md. "
        "Precedence: --noise preset < --seed < --seed-<source>; --noise < --impl < --impl-site.");
    add_train_flags(*train, cfg);
    return train;
}

const std::vector<std::string>& replay_compatible_flags() {
    static const std::vector<std::string> v = {"--replay",   "--out",      "--progress",
                                               "--threads",  "--isa",      "--data-dir",
                                               "--checkpoint-every"};
    return v;
}

TrainConfig replay_config(const std::string& path, const nlohmann::json& record,
                          const TrainConfig& given, const std::vector<std::string>& flags) {
    const auto& ok = replay_compatible_flags();
    std::vector<std::string> refused;
    for (const std::string& f : flags) {
        if (std::find(ok.begin(), ok.end(), f) == ok.end()) refused.push_back(f);
    }
    if (!refused.empty()) {
        throw ValueError(str("--replay: ", join_text(refused),
                             " cannot be combined with --replay, which re-runs the recorded "
                             "configuration as it is; allowed with it: ",
                             join_text({ok.begin() + 1, ok.end()})));
    }
    if (!record.is_object() || !record.contains("config") || !record.contains("noise")) {
        throw ValueError(str("--replay: ", path,
                             " has no \"config\" and \"noise\" objects; expected the "
                             "result.json of a detrain run (version 0.1 with the noise block)"));
    }
    TrainConfig c = train_config_from_json(record.at("config"));
    try {
        c.noise = noise_config_from_json(record.at("noise"));
    } catch (const ValueError& e) {
        throw ValueError(str("--replay: ", path, ": ", e.what()));
    }
    c.noise_from_record = true;
    c.replay = path;
    if (record.contains("weights_sha256") && record.at("weights_sha256").is_string()) {
        c.replay_of_sha256 = record.at("weights_sha256").get<std::string>();
    }
    auto has = [&](const char* f) {
        return std::find(flags.begin(), flags.end(), f) != flags.end();
    };
    c.progress = given.progress;  // how verbose this run is: never the record's
    if (has("--threads")) c.threads = given.threads;
    if (has("--isa")) c.isa = given.isa;
    if (has("--data-dir")) c.data_dir = given.data_dir;
    if (has("--checkpoint-every")) c.checkpoint_every = given.checkpoint_every;
    if (has("--out")) {
        c.out = given.out;
    } else {
        namespace fs = std::filesystem;  // runs/a/result.json -> runs/a-replay
        fs::path dir = fs::path(path).parent_path().lexically_normal();
        if (!dir.empty() && !dir.has_filename()) dir = dir.parent_path();  // "runs/a/"
        c.out = dir.empty() || dir == "." ? std::string("replay") : dir.string() + "-replay";
    }
    return c;
}

int run_train_command(const CLI::App& train, TrainConfig& cfg,
                      const std::vector<std::string>& command_line) {
    std::vector<std::string> notes, notices;  // notices show with --progress none too
    std::optional<Checkpoint> checkpoint;
    if (!cfg.resume.empty()) {
        DT_CHECK_VALUE(cfg.replay.empty(), "--resume and --replay cannot be combined: --replay "
                       "starts a run anew, --resume continues one");
        if (resume_has_checkpoint(cfg.resume)) {
            checkpoint = read_checkpoint(cfg.resume);
            std::vector<std::string> forced;  // differences refused unless --force
            cfg = resume_config(*checkpoint, cfg, given_flags(train), &forced);
            for (const std::string& d : forced) notes.push_back("--force: " + d);
        } else {  // stopped before its first checkpoint: the same command starts it anew
            notices.push_back(restart_note(cfg.resume));
            cfg = restart_config(cfg, given_flags(train));
        }
    } else if (!cfg.replay.empty()) {
        const nlohmann::json record = read_record(cfg.replay);
        cfg = replay_config(cfg.replay, record, cfg, given_flags(train));
        notes = replay_notes(cfg, record);
    }
    if (!checkpoint) finalize_train_config(cfg);  // resume_config has finalized it
    io::prepare_output_dir(cfg.out);  // an unusable --out fails now, not after training
    Progress progress(Progress::parse_mode(cfg.progress, stderr), stderr);
    for (const std::string& n : notices) progress.notice(n);
    for (const std::string& n : notes) progress.note(n);
    TrainResult result = run_training(cfg, progress, checkpoint ? &*checkpoint : nullptr);
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
