// SPDX-License-Identifier: MIT
// study.json, summary.csv, plots and report.md (contract in study_report.h).
#include "apps/study/study_report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/common/version.h"
#include "apps/study/svg_plot.h"
#include "engine/core/text.h"
#include "engine/io/atomic_file.h"

namespace fs = std::filesystem;

namespace dt::study {

namespace {

using Json = nlohmann::ordered_json;

/// printf-style number; "n/a" for NaN, "inf" for infinity.
std::string num(double v, const char* fmt = "%.4g") {
    if (std::isnan(v)) return "n/a";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

std::string pct(double v) { return std::isfinite(v) ? num(100 * v, "%.2f") : num(v); }

/// A CSV field: a number with full precision, empty for NaN.
std::string csv_num(double v) { return std::isnan(v) ? "" : num(v, "%.9g"); }

std::vector<std::string> variant_names_of(const StudyReport& r) {
    std::vector<std::string> v;
    for (const VariantResult& x : r.variants) v.push_back(x.variant.name);
    return v;
}

plot::BarChart per_variant_chart(const StudyReport& r, const std::string& title,
                                 const std::string& y_label, double (*value)(const VariantMetrics&),
                                 double (*error)(const VariantMetrics&)) {
    plot::BarChart c;
    c.title = title;
    c.x_label = "noise variant";
    c.y_label = y_label;
    c.categories = variant_names_of(r);
    plot::Series s{y_label, {}, {}};
    for (const VariantResult& v : r.variants) {
        s.values.push_back(value(v.metrics));
        if (error != nullptr) s.errors.push_back(error(v.metrics));
    }
    c.series.push_back(std::move(s));
    return c;
}

plot::BarChart per_class_chart(const StudyReport& r) {
    plot::BarChart c;
    c.title = "Per-class accuracy stddev (bars) vs top-line stddev (lines)";
    c.x_label = "class";
    c.y_label = "accuracy stddev (percentage points)";
    c.categories = r.class_names;
    for (const VariantResult& v : r.variants) {
        plot::Series s{v.variant.name, {}, {}};
        for (double x : v.metrics.per_class_acc_std) s.values.push_back(100 * x);
        s.values.resize(c.categories.size(), std::nan(""));
        c.series.push_back(std::move(s));
        c.reference_lines.emplace_back(v.variant.name + " top-line", 100 * v.metrics.acc_std);
    }
    return c;
}

/// A language model's study: its replicas record validation losses.
bool language_model(const StudyReport& r) {
    for (const VariantResult& v : r.variants)
        if (std::isfinite(v.metrics.val_loss_mean)) return true;
    return false;
}

void write_text(const fs::path& p, const std::string& s) {
    io::write_file_atomically(p.string(), s);
}

}  // namespace

Json replica_record(const nlohmann::json& result, int index, const std::string& dir, double seconds,
                    bool reused) {
    Json j;
    j["index"] = index;
    j["dir"] = dir;
    j["test_accuracy"] = result.value("test_accuracy", std::nan(""));
    j["weights_sha256"] = result.value("weights_sha256", "");
    j["seeds"] = result.contains("seeds") ? Json(result.at("seeds")) : Json(nullptr);
    j["noise"] = result.contains("noise") ? Json(result.at("noise")) : Json(nullptr);
    j["threads"] = result.value("threads", 0);
    j["train_wall_time_seconds"] = result.value("wall_time_seconds", 0.0);
    j["process_seconds"] = seconds;
    j["reused_from_earlier_run"] = reused;
    return j;
}

std::string summary_csv(const StudyReport& r) {
    std::string s =
        "variant,replicas,accuracy_mean,accuracy_stddev,churn_mean,churn_stddev,"
        "weight_distance_mean,weight_distance_stddev,per_class_stddev_max,per_class_stddev_ratio,"
        "prediction_correlation_mean,ensemble_gain_mean,validation_loss_mean,"
        "validation_loss_stddev\n";
    for (const VariantResult& v : r.variants) {
        const VariantMetrics& m = v.metrics;
        s += v.variant.name + "," + std::to_string(m.replicas) + "," + csv_num(m.acc_mean) + "," +
             csv_num(m.acc_std) + "," + csv_num(m.churn.mean) + "," + csv_num(m.churn.stddev) +
             "," + csv_num(m.weight_distance.mean) + "," + csv_num(m.weight_distance.stddev) + "," +
             csv_num(m.per_class_std_max) + "," + csv_num(m.per_class_std_ratio) + "," +
             csv_num(m.prediction_correlation.mean) + "," + csv_num(m.ensemble_gain.mean) + "," +
             csv_num(m.val_loss_mean) + "," + csv_num(m.val_loss_std) + "\n";
    }
    return s;
}

std::string report_markdown(const StudyReport& r) {
    std::string s = "# detrain study\n\n";
    s += "Command: `" + join_text(r.command_line, " ") + "`\n\n";
    s += "Every replica trains with: `" + join_text(r.train_flags, " ") +
         "` plus its variant's "
         "flags (study.json lists each replica's seeds and noise block). " +
         std::to_string(r.replicas) +
         " replicas per variant. Metrics: docs/study-metrics.md "
         "(churn = fraction of test examples on which two models disagree, averaged over pairs; "
         "weight distance = ‖w₁/‖w₁‖ − w₂/‖w₂‖‖ over trainable parameters, BN running statistics "
         "excluded; stddev with n−1).\n\n";
    s += "## Stability per variant (cf. Table 2 of Zhuang et al. 2021)\n\n";
    s += "| variant | accuracy % (mean ± sd) | churn % (mean ± sd over pairs) | weight distance | "
         "max per-class sd (pp) | max per-class / top-line sd | prediction corr. | "
         "2-model ensemble gain (pp) |\n|---|---|---|---|---|---|---|---|\n";
    for (const VariantResult& v : r.variants) {
        const VariantMetrics& m = v.metrics;
        s += "| " + v.variant.name + " | " + pct(m.acc_mean) + " ± " + pct(m.acc_std) + " | " +
             pct(m.churn.mean) + " ± " + pct(m.churn.stddev) + " | " + num(m.weight_distance.mean) +
             " | " + pct(m.per_class_std_max) + " | " + num(m.per_class_std_ratio, "%.2f") + " | " +
             num(m.prediction_correlation.mean, "%.5f") + " | " + pct(m.ensemble_gain.mean) +
             " |\n";
    }
    s += "\nVariants:\n\n";
    for (const VariantResult& v : r.variants) {
        s += "- `" + v.variant.name + "`: " + v.variant.description + "\n";
    }
    bool any_subgroup = false;
    for (const VariantResult& v : r.variants)
        any_subgroup = any_subgroup || !v.metrics.subgroups.empty();
    if (any_subgroup) {
        s +=
            "\n## Subgroups\n\n| variant | subgroup | accuracy % (mean ± sd) | FPR % (mean ± sd) | "
            "FNR % (mean ± sd) |\n|---|---|---|---|---|\n";
        for (const VariantResult& v : r.variants) {
            for (const SubgroupStats& g : v.metrics.subgroups) {
                s += "| " + v.variant.name + " | " + g.name + " | " + pct(g.acc_mean) + " ± " +
                     pct(g.acc_std) + " | " + pct(g.fpr_mean) + " ± " + pct(g.fpr_std) + " | " +
                     pct(g.fnr_mean) + " ± " + pct(g.fnr_std) + " |\n";
            }
        }
    }
    if (language_model(r)) {
        s += "\n## Validation loss per variant (a language model)\n\n"
             "Accuracy and churn above are per validation token: the next byte predicted, and "
             "the fraction of tokens whose predicted byte differs between two replicas.\n\n"
             "| variant | validation loss, nats (mean ± sd) | bits per byte (mean ± sd) |\n"
             "|---|---|---|\n";
        const double ln2 = std::log(2.0);
        for (const VariantResult& v : r.variants) {
            const VariantMetrics& m = v.metrics;
            s += "| " + v.variant.name + " | " + num(m.val_loss_mean, "%.4f") + " ± " +
                 num(m.val_loss_std, "%.4f") + " | " + num(m.val_loss_mean / ln2, "%.4f") + " ± " +
                 num(m.val_loss_std / ln2, "%.4f") + " |\n";
        }
    }
    s += "\n## Plots\n\n";
    s += "![accuracy stddev](plots/accuracy_stddev.svg)\n\n![churn](plots/churn.svg)\n\n"
         "![weight distance](plots/weight_distance.svg)\n";
    if (!r.class_names.empty()) s += "\n![per-class stddev](plots/per_class_stddev.svg)\n";
    if (language_model(r)) s += "\n![validation loss stddev](plots/validation_loss_stddev.svg)\n";
    if (!r.notes.empty()) {
        s += "\n## Notes\n\n";
        for (const std::string& n : r.notes) s += "- " + n + "\n";
    }
    return s;
}

Json study_json(const StudyReport& r) {
    Json j;
    j["detrain_version"] = version_string();
    j["command_line"] = r.command_line;
    j["train_flags"] = r.train_flags;
    j["replicas_per_variant"] = r.replicas;
    j["class_names"] = r.class_names;
    Json groups = Json::array();
    for (const Subgroup& g : r.subgroups)
        groups.push_back(Json{{"name", g.name}, {"classes", g.classes}});
    j["subgroups"] = groups;
    j["notes"] = r.notes;
    Json variants = Json::array();
    for (const VariantResult& v : r.variants) {
        variants.push_back(Json{{"name", v.variant.name},
                                {"description", v.variant.description},
                                {"metrics", to_json(v.metrics)},
                                {"replicas", v.replicas}});
    }
    j["variants"] = variants;
    j["files"] = Json{{"summary", "summary.csv"}, {"report", "report.md"}, {"plots", "plots/"}};
    return j;
}

std::string write_study_outputs(const StudyReport& r) {
    const fs::path dir(r.out_dir);
    fs::create_directories(dir / "plots");
    using M = VariantMetrics;
    write_text(dir / "plots" / "accuracy_stddev.svg",
               plot::bar_chart_svg(per_variant_chart(
                   r, "Top-1 accuracy stddev over replicas", "accuracy stddev (pp)",
                   [](const M& m) { return 100 * m.acc_std; }, nullptr)));
    write_text(dir / "plots" / "churn.svg",
               plot::bar_chart_svg(per_variant_chart(
                   r, "Churn: disagreement between two replicas (mean over pairs, +-sd)",
                   "churn (%)", [](const M& m) { return 100 * m.churn.mean; },
                   [](const M& m) { return 100 * m.churn.stddev; })));
    write_text(dir / "plots" / "weight_distance.svg",
               plot::bar_chart_svg(per_variant_chart(
                   r, "Normalised weight distance between two replicas (mean over pairs, +-sd)",
                   "weight distance", [](const M& m) { return m.weight_distance.mean; },
                   [](const M& m) { return m.weight_distance.stddev; })));
    if (!r.class_names.empty())  // a language model has no classes to chart
        write_text(dir / "plots" / "per_class_stddev.svg", plot::bar_chart_svg(per_class_chart(r)));
    if (language_model(r)) {
        write_text(dir / "plots" / "validation_loss_stddev.svg",
                   plot::bar_chart_svg(per_variant_chart(
                       r, "Validation loss stddev over replicas", "validation loss stddev (nats)",
                       [](const M& m) { return m.val_loss_std; }, nullptr)));
    }
    write_text(dir / "summary.csv", summary_csv(r));
    write_text(dir / "report.md", report_markdown(r));
    write_text(dir / "study.json", study_json(r).dump(2) + "\n");  // last: the study is complete
    return (dir / "report.md").string();
}

}  // namespace dt::study
