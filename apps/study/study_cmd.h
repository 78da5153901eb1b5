// SPDX-License-Identifier: MIT
// `detrain study`: trains N replicas per noise variant (apps/study/study_config.h) as `detrain
// train` child processes (apps/study/study_runner.h), then measures their stability
// (apps/study/study_metrics.h) and writes study.json, summary.csv, plots and report.md
// (apps/study/study_report.h). Flags that are not the study's own are train flags: validated once,
// then given to every replica.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dt {

struct StudyFlags {
    int replicas = 5;
    std::string variants = "paper";
    int jobs = 1;
    std::string out;                     // "" -> runs/study-<model>-<dataset>
    std::vector<std::string> subgroups;  // NAME=C1,C2,... (repeatable)
    std::string progress = "auto";       // auto | plain | none (per-replica lines)
    bool report_only = false;            // report the finished replicas, train nothing
};

/// Adds the `study` subcommand (its own flags into `flags`; other flags are kept as extras).
CLI::App* add_study_command(CLI::App& app, StudyFlags& flags);

/// Runs a parsed `study`. `command_line` is argv (recorded in study.json); *out_dir (when
/// given) is set to the study's directory, its default resolved. Throws dt::Error.
int run_study_command(const CLI::App& study, const StudyFlags& flags,
                      const std::vector<std::string>& command_line,
                      std::string* out_dir = nullptr);

}  // namespace dt
