// SPDX-License-Identifier: MIT
// The outputs of `detrain study` in DIR (docs/study.md):
//   study.json         everything: plan, per-replica records (seeds, hash, accuracy, time), the
//                      metrics of every variant (docs/study-metrics.md)
//   summary.csv        one row per variant, the headline numbers
//   plots/*.svg        accuracy stddev, churn, weight distance per variant (the tooling paper's
//                      Figure 2); per-class accuracy stddev against the top-line stddev (Figure 5)
//   report.md          a table shaped like the paper's Table 2, the plots, notes
// Every file is written atomically.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/study/study_config.h"
#include "apps/study/study_metrics.h"

namespace dt::study {

struct VariantResult {
    Variant variant;
    VariantMetrics metrics;
    std::vector<nlohmann::ordered_json> replicas;  // per replica: index, dir, accuracy, hash, seeds
};

struct StudyReport {
    std::string out_dir;
    std::vector<std::string> command_line;
    std::vector<std::string> train_flags;  // as passed to every replica
    int replicas = 0;
    std::vector<std::string> class_names;
    std::vector<Subgroup> subgroups;
    std::vector<std::string> notes;
    std::vector<VariantResult> variants;
};

/// One replica's record for study.json, from its result.json.
nlohmann::ordered_json replica_record(const nlohmann::json& result, int index,
                                      const std::string& dir, double seconds, bool reused);

/// summary.csv contents.
std::string summary_csv(const StudyReport& r);
/// report.md contents (plots referenced as plots/<name>.svg).
std::string report_markdown(const StudyReport& r);
/// study.json document.
nlohmann::ordered_json study_json(const StudyReport& r);

/// Writes study.json, summary.csv, plots/*.svg and report.md into r.out_dir; returns the path of
/// report.md.
std::string write_study_outputs(const StudyReport& r);

}  // namespace dt::study
