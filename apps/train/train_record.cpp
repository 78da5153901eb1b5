// SPDX-License-Identifier: MIT
// Re-running a recorded recipe: --replay and the reading shared with --resume (train_record.h).
#include "apps/train/train_record.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/common/version.h"
#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

const std::vector<std::string>& run_option_flags() {
    static const std::vector<std::string> v = {
        "--threads",  "--isa",      "--device",   "--micro-batch", "--sync-bn",
        "--overlap",  "--bucket-elements",        "--progress",    "--data-dir",
        "--checkpoint-every",       "--out",      "--trace",       "--stop-after"};
    return v;
}

TrainConfig recorded_config(const std::string& source, const nlohmann::json& config,
                            const nlohmann::json& noise, const TrainConfig& given,
                            const std::vector<std::string>& flags) {
    TrainConfig c;
    try {
        c = train_config_from_json(config);
        c.noise = noise_config_from_json(noise);
    } catch (const ValueError& e) {
        throw ValueError(str(source, ": ", e.what()));
    }
    c.noise_from_record = true;
    RunOptions& run = c;
    const RunOptions& mine = given;
    run.progress = mine.progress;  // how verbose this run is: never the record's
    if (contains(flags, "--threads")) run.threads = mine.threads;
    if (contains(flags, "--isa")) run.isa = mine.isa;
    if (contains(flags, "--device")) run.device = mine.device;
    if (contains(flags, "--micro-batch")) run.micro_batch = mine.micro_batch;
    if (contains(flags, "--sync-bn")) run.sync_bn = mine.sync_bn;
    if (contains(flags, "--overlap")) run.overlap = mine.overlap;
    if (contains(flags, "--bucket-elements")) run.bucket_elements = mine.bucket_elements;
    if (contains(flags, "--data-dir")) run.data_dir = mine.data_dir;
    if (contains(flags, "--checkpoint-every")) run.checkpoint_every = mine.checkpoint_every;
    if (contains(flags, "--out")) run.out = mine.out;
    if (contains(flags, "--trace")) run.trace = mine.trace;
    if (contains(flags, "--stop-after")) run.stop_after = mine.stop_after;
    return c;
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

TrainConfig replay_config(const std::string& path, const nlohmann::json& record,
                          const TrainConfig& given, const std::vector<std::string>& flags) {
    std::vector<std::string> refused;
    for (const std::string& f : flags) {
        if (f != "--replay" && !contains(run_option_flags(), f)) refused.push_back(f);
    }
    if (!refused.empty()) {
        throw ValueError(str("--replay: ", join_text(refused),
                             " cannot be combined with --replay, which re-runs the recorded "
                             "configuration as it is; allowed with it: ",
                             join_text(run_option_flags())));
    }
    if (!record.is_object() || !record.contains("config") || !record.contains("noise")) {
        throw ValueError(str("--replay: ", path,
                             " has no \"config\" and \"noise\" objects; expected the "
                             "result.json of a detrain run (version 0.1 with the noise block)"));
    }
    TrainConfig c =
        recorded_config("--replay " + path, record.at("config"), record.at("noise"), given, flags);
    c.replay = path;
    if (record.contains("weights_sha256") && record.at("weights_sha256").is_string()) {
        c.replay_of_sha256 = record.at("weights_sha256").get<std::string>();
    }
    if (!contains(flags, "--out")) {
        namespace fs = std::filesystem;  // runs/a/result.json -> runs/a-replay
        fs::path dir = fs::path(path).parent_path().lexically_normal();
        if (!dir.empty() && !dir.has_filename()) dir = dir.parent_path();  // "runs/a/"
        c.out = dir.empty() || dir == "." ? std::string("replay") : dir.string() + "-replay";
    }
    return c;
}

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

}  // namespace dt
