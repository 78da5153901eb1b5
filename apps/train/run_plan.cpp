// SPDX-License-Identifier: MIT
// The run plan (contract in run_plan.h).
#include "apps/train/run_plan.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/common/version.h"
#include "engine/core/error.h"
#include "engine/io/atomic_file.h"

namespace dt {

namespace {
constexpr const char* kFormat = "detrain-run-plan";
constexpr int kFormatVersion = 1;
}  // namespace

std::string run_plan_path(const std::string& dir) {
    return (std::filesystem::path(dir) / "run_plan.json").string();
}

void write_run_plan(const TrainConfig& cfg, const std::vector<std::string>& command_line) {
    nlohmann::ordered_json j;
    j["format"] = kFormat;
    j["format_version"] = kFormatVersion;
    j["detrain_version"] = version_string();
    j["recipe"] = kRecipeVersion;
    j["command_line"] = command_line;
    j["config"] = to_json(cfg);
    j["noise"] = to_json(cfg.noise);
    io::write_file_atomically(run_plan_path(cfg.out), j.dump(2) + "\n");
}

std::optional<RecordedRun> read_run_plan(const std::string& dir) {
    const std::string path = run_plan_path(dir);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw IoError(str("run plan ", path, ": cannot be read"));
    const char* hint = " (hint: start the run anew with its flags and --out DIR)";
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw IoError(str("run plan ", path, ": not valid JSON: ", e.what(), hint));
    }
    if (!j.is_object() || j.value("format", "") != kFormat ||
        !j.contains("format_version") || !j.contains("config") || !j.contains("noise")) {
        throw IoError(str("run plan ", path, ": not a detrain run plan", hint));
    }
    if (j.at("format_version") != kFormatVersion) {
        throw IoError(str("run plan ", path, ": format_version ", j.at("format_version").dump(),
                          " is not supported (this detrain reads version ", kFormatVersion, ")",
                          hint));
    }
    const nlohmann::json recipe = j.value("recipe", nlohmann::json());
    if (recipe != kRecipeVersion) {
        throw IoError(str("run plan ", path, " was written by a detrain with training recipe ",
                          recipe.dump(), ", this one trains recipe ", kRecipeVersion,
                          ": the run would not give the bits it planned (hint: finish the run "
                          "with the detrain that started it, or start it anew)"));
    }
    return RecordedRun{path, j.at("config"), j.at("noise")};
}

}  // namespace dt
