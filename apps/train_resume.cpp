// SPDX-License-Identifier: MIT
// The configuration of `detrain train --resume DIR` (rules in train_resume.h).
#include "apps/train_resume.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

namespace {

const std::vector<std::string>& noise_flags() {
    static const std::vector<std::string> v = {
        "--noise",        "--seed",         "--seed-init",           "--seed-shuffle",
        "--seed-augment", "--seed-dropout", "--no-shuffle",          "--init-perturb",
        "--impl",         "--impl-site",    "--shuffle-within-batch"};
    return v;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

/// The run's configuration as its checkpoint records it.
TrainConfig run_config(const Checkpoint& ck) {
    TrainConfig c;
    try {
        c = train_config_from_json(ck.config);
        c.noise = noise_config_from_json(ck.noise);
    } catch (const ValueError& e) {
        throw IoError(
            str("checkpoint ", ck.path, ": its configuration cannot be read: ", e.what()));
    }
    c.noise_from_record = true;
    return c;
}

/// The noise configuration the given noise flags make; a `random` setting that is random in the
/// run too keeps the run's draw, other random settings are drawn now (and so differ).
NoiseConfig given_noise(const TrainConfig& given, const NoiseConfig& run) {
    NoiseConfig n = noise_config_from_flags(given.noise_flags);
    auto keep = [](SourceSetting& s, const SourceSetting& r) {
        if (s.kind == SourceKind::kRandom && r.kind == SourceKind::kRandom) s = r;
    };
    keep(n.init, run.init);
    keep(n.shuffle, run.shuffle);
    keep(n.augment, run.augment);
    keep(n.dropout, run.dropout);
    keep(n.shuffle_within_batch, run.shuffle_within_batch);
    for (std::size_t i = 0; i < n.sites.size(); ++i) keep(n.sites[i].permute, run.sites[i].permute);
    resolve_noise_config(n);
    return n;
}

/// An ordered_json (to_json's) as a plain json, to compare with the checkpoint's.
nlohmann::json plain(const nlohmann::ordered_json& j) { return nlohmann::json::parse(j.dump()); }

std::string given_noise_flags(const std::vector<std::string>& flags) {
    std::vector<std::string> v;
    for (const std::string& f : flags) {
        if (contains(noise_flags(), f)) v.push_back(f);
    }
    return join_text(v);
}

}  // namespace

const std::vector<std::string>& resume_compatible_flags() {
    static const std::vector<std::string> v = {
        "--resume",   "--force",    "--threads",         "--isa",
        "--progress", "--data-dir", "--checkpoint-every"};
    return v;
}

std::vector<std::string> resume_differences(const Checkpoint& ck, const TrainConfig& given,
                                            const std::vector<std::string>& flags) {
    const TrainConfig run_cfg = run_config(ck);
    const nlohmann::json run_json = ck.config;
    const nlohmann::json given_json = plain(to_json(given));
    std::vector<std::string> diffs;
    for (const std::string& flag : flags) {
        if (contains(resume_compatible_flags(), flag) || contains(noise_flags(), flag)) continue;
        const std::string key = flag.substr(2);
        if (flag == "--out") {
            namespace fs = std::filesystem;
            std::error_code ec;
            if (!fs::equivalent(given.out, given.resume, ec)) {
                diffs.push_back(str("--out: a resumed run writes into its --resume directory ",
                                    given.resume, ", given ", given.out));
            }
        } else if (!run_json.contains(key) || !given_json.contains(key)) {
            diffs.push_back(str(flag, ": cannot be combined with --resume"));
        } else if (run_json.at(key) != given_json.at(key)) {
            diffs.push_back(str(flag, ": the run has ", run_json.at(key).dump(), ", given ",
                                given_json.at(key).dump()));
        }
    }
    if (!given_noise_flags(flags).empty()) {
        const nlohmann::json mine = plain(to_json(given_noise(given, run_cfg.noise)));
        const nlohmann::json& theirs = ck.noise;
        auto differ = [&](const std::string& key, const nlohmann::json* had,
                          const nlohmann::json& made) {
            diffs.push_back(str("noise ", key, ": the run has ", had ? had->dump() : "nothing",
                                ", the given ", given_noise_flags(flags), " make ", made.dump()));
        };
        for (const auto& [key, value] : mine.items()) {  // object members one by one
            const nlohmann::json* run = theirs.contains(key) ? &theirs.at(key) : nullptr;
            if (run && *run == value) continue;
            if (run && run->is_object() && value.is_object()) {
                for (const auto& [sub, v] : value.items()) {
                    const nlohmann::json* r = run->contains(sub) ? &run->at(sub) : nullptr;
                    if (!r || *r != v) differ(key + "." + sub, r, v);
                }
            } else {
                differ(key, run, value);
            }
        }
    }
    return diffs;
}

TrainConfig resume_config(const Checkpoint& ck, const TrainConfig& given,
                          const std::vector<std::string>& flags) {
    const std::vector<std::string> diffs = resume_differences(ck, given, flags);
    if (!diffs.empty() && !given.force) {
        std::string list;
        for (const std::string& d : diffs) list += "\n  " + d;
        throw ValueError(str("--resume ", given.resume,
                             ": the given flags differ from the configuration of the run:", list,
                             "\n(hint: leave them out to continue the run as it was, or add "
                             "--force to continue with the given values)"));
    }
    TrainConfig c = run_config(ck);
    if (given.force) {  // the given values win
        nlohmann::json j = ck.config;
        const nlohmann::json given_json = plain(to_json(given));
        for (const std::string& flag : flags) {
            const std::string key = flag.substr(2);
            if (!contains(resume_compatible_flags(), flag) && !contains(noise_flags(), flag) &&
                flag != "--out" && j.contains(key) && given_json.contains(key)) {
                j[key] = given_json.at(key);
            }
        }
        const NoiseConfig noise = c.noise;
        c = run_config(Checkpoint{ck.path, j, ck.noise, {}, {}});
        c.noise = given_noise_flags(flags).empty() ? noise : given_noise(given, noise);
    }
    auto has = [&](const char* f) { return contains(flags, f); };
    c.progress = given.progress;  // how verbose this run is: never the record's
    if (has("--threads")) c.threads = given.threads;
    if (has("--isa")) c.isa = given.isa;
    if (has("--data-dir")) c.data_dir = given.data_dir;
    if (has("--checkpoint-every")) c.checkpoint_every = given.checkpoint_every;
    c.out = given.resume;
    c.resume = given.resume;
    c.force = given.force;
    finalize_train_config(c);
    return c;
}

}  // namespace dt
