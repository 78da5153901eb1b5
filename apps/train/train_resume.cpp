// SPDX-License-Identifier: MIT
// The configuration of `detrain train --resume DIR` (rules in train_resume.h).
#include "apps/train/train_resume.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/train/train_record.h"
#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

/// A run's configuration from its checkpoint's "config" and "noise" objects, with this command's
/// run options (recorded_config, the reading --replay shares). IoError: the checkpoint's fault.
TrainConfig run_config(const std::string& path, const nlohmann::json& config,
                       const nlohmann::json& noise, const TrainConfig& given,
                       const std::vector<std::string>& flags) {
    try {
        return recorded_config("checkpoint " + path, config, noise, given, flags);
    } catch (const ValueError& e) {
        throw IoError(str(e.what(), " (the checkpoint's configuration cannot be read)"));
    }
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
        if (contains(noise_flag_names(), f)) v.push_back(f);
    }
    return join_text(v);
}

}  // namespace

bool resume_has_checkpoint(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(checkpoint_path(dir), ec)) return true;
    const fs::path result = fs::path(dir) / "result.json";
    DT_CHECK_VALUE(!fs::exists(result, ec), "--resume ", dir, ": the directory holds a finished ",
                   "run (", result.string(), ") and no checkpoint, so there is nothing to ",
                   "continue (hint: its results are final; to train again, give another --out)");
    return false;
}

TrainConfig restart_config(const TrainConfig& given, const std::vector<std::string>& flags) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (contains(flags, "--out") && given.out != given.resume &&
        !fs::equivalent(given.out, given.resume, ec)) {
        throw ValueError(str("--resume ", given.resume, ": a resumed run writes into its --resume "
                             "directory, given --out ", given.out,
                             " (hint: leave --out out, or give the same directory)"));
    }
    const bool bare = std::all_of(flags.begin(), flags.end(), [](const std::string& f) {
        return contains(resume_compatible_flags(), f);
    });
    if (bare) {
        const char* hint = " (hint: check the path; to start a new run there, give its flags "
                           "with --out DIR)";
        if (!fs::exists(given.resume, ec))
            throw ValueError(str("--resume ", given.resume, ": there is no such directory, so "
                                 "there is no run to continue", hint));
        throw ValueError(str("--resume ", given.resume, ": the directory holds no run plan (",
                             run_plan_path(given.resume), ") and no checkpoint, so there is no "
                             "run to continue", hint));
    }
    TrainConfig c = given;
    c.out = given.resume;
    return c;
}

std::string restart_note(const std::string& dir) {
    return str("--resume ", dir, ": no checkpoint there yet (the run was stopped before its "
               "first one): starting the run from the beginning with the given flags");
}

std::string plan_restart_note(const std::string& dir) {
    return str("--resume ", dir, ": no checkpoint there yet (the run was stopped before its "
               "first one): starting the run of ", run_plan_path(dir), " from the beginning");
}

const std::vector<std::string>& resume_compatible_flags() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> flags = {"--resume", "--force"};
        for (const std::string& f : run_option_flags()) {
            if (f != "--out") flags.push_back(f);  // a resumed run writes into its DIR
        }
        return flags;
    }();
    return v;
}

namespace {

/// The differences of the given flags from the run, and what they would change.
struct Differences {
    std::vector<std::string> lines;        // one per difference, for people
    std::vector<std::string> config_keys;  // differing keys of the "config" object
    std::optional<NoiseConfig> noise;      // made by the given noise flags, when any is given
};

Differences differences(const RecordedRun& ck, const TrainConfig& given,
                        const std::vector<std::string>& flags) {
    const nlohmann::json& run_json = ck.config;
    const nlohmann::json given_json = plain(to_json(given));
    Differences d;
    for (const std::string& flag : flags) {
        if (contains(resume_compatible_flags(), flag) || contains(noise_flag_names(), flag)) {
            continue;
        }
        const std::string key = flag.substr(2);
        if (flag == "--out") {
            namespace fs = std::filesystem;
            std::error_code ec;
            if (!fs::equivalent(given.out, given.resume, ec)) {
                d.lines.push_back(str("--out: a resumed run writes into its --resume directory ",
                                      given.resume, ", given ", given.out));
            }
        } else if (!run_json.contains(key) || !given_json.contains(key)) {
            d.lines.push_back(str(flag, ": cannot be combined with --resume"));
        } else if (run_json.at(key) != given_json.at(key)) {
            d.lines.push_back(str(flag, ": the run has ", run_json.at(key).dump(), ", given ",
                                  given_json.at(key).dump()));
            d.config_keys.push_back(key);
        }
    }
    if (given_noise_flags(flags).empty()) return d;
    d.noise = given_noise(given, run_config(ck.path, ck.config, ck.noise, given, {}).noise);
    const nlohmann::json mine = plain(to_json(*d.noise));
    const nlohmann::json& theirs = ck.noise;
    auto differ = [&](const std::string& key, const nlohmann::json* had,
                      const nlohmann::json& made) {
        d.lines.push_back(str("noise ", key, ": the run has ", had ? had->dump() : "nothing",
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
    return d;
}

}  // namespace

std::vector<std::string> resume_differences(const RecordedRun& ck, const TrainConfig& given,
                                            const std::vector<std::string>& flags) {
    return differences(ck, given, flags).lines;
}

TrainConfig resume_config(const RecordedRun& ck, const TrainConfig& given,
                          const std::vector<std::string>& flags, std::vector<std::string>* forced) {
    const Differences d = differences(ck, given, flags);
    if (!d.lines.empty() && !given.force) {
        std::string list;
        for (const std::string& line : d.lines) list += "\n  " + line;
        throw ValueError(str("--resume ", given.resume,
                             ": the given flags differ from the configuration of the run:", list,
                             "\n(hint: leave them out to continue the run as it was, or add "
                             "--force to continue with the given values)"));
    }
    nlohmann::json config = ck.config;  // with --force, the given values win
    const nlohmann::json given_json = plain(to_json(given));
    for (const std::string& key : d.config_keys) config[key] = given_json.at(key);
    TrainConfig c = run_config(ck.path, config, ck.noise, given, flags);
    if (given.force && d.noise) c.noise = *d.noise;
    if (forced) *forced = d.lines;
    c.out = given.resume;  // a resumed run writes into its DIR (a differing --out is refused)
    c.resume = given.resume;
    c.force = given.force;
    finalize_train_config(c);
    return c;
}

}  // namespace dt
