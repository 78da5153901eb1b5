// SPDX-License-Identifier: MIT
// `detrain audit` (contract in audit_cmd.h).
#include "apps/audit/audit_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/audit/audit_compare.h"
#include "apps/audit/audit_error.h"
#include "apps/audit/audit_matrix.h"
#include "apps/audit/audit_runs.h"
#include "apps/audit/trace_file.h"
#include "apps/train/progress.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "engine/core/error.h"
#include "engine/io/atomic_file.h"

namespace dt {

namespace {

/// The audit's JSON object: on stdout with --json, into --json-out's file (atomically) when set.
void emit_json(const AuditFlags& f, const nlohmann::json& j) {
    if (f.json) std::printf("%s\n", j.dump(2).c_str());
    if (!f.json_out.empty()) io::write_file_atomically(f.json_out, j.dump(2) + "\n");
}

/// audit --error: one configuration, every reduction rerun in every mode (site_probe.h).
int run_error_audit(const std::vector<std::string>& flags, const AuditFlags& f) {
    DT_CHECK_VALUE(f.vs.empty(), "audit --error measures one configuration: no --vs");
    TrainConfig cfg = audit_configs(flags, flags, f.steps).first;
    DT_CHECK_VALUE(cfg.device == "cpu",
                   "audit --error runs on the cpu (it reruns every "
                   "reduction into host buffers)");
    SiteProbe probe;
    Progress quiet(Progress::Mode::kNone);
    {
        const ScopedSiteProbe scope(probe);
        (void)run_training(cfg, quiet);
    }
    emit_json(f, {{"flags", join_words(flags)},
                  {"steps", f.steps},
                  {"reference", "exact"},
                  {"sites", site_error_json(probe)}});
    if (!f.json) {
        std::printf("run  %s, %lld steps\n",
                    flags.empty() ? "(defaults)" : join_words(flags).c_str(),
                    static_cast<long long>(f.steps));
        print_site_errors(stdout, probe);
    }
    return 0;
}

}  // namespace

CLI::App* add_audit_command(CLI::App& app, AuditFlags& f) {
    CLI::App* a = app.add_subcommand(
        "audit",
        "Find where two training runs that should be identical part ways: the first op output, "
        "gradient or weight whose bits differ, by how much, and how the difference spreads");
    a->allow_extras();
    a->footer(
        "Flags that are not audit flags are train flags (run A); run B adds the --vs flags, "
        "e.g.\n  detrain audit --model smallcnn --limit-train 512 --vs \"--threads 1\"\n"
        "  detrain audit --impl exact --vs \"--shuffle-within-batch 3\" --json\n"
        "  detrain audit --traces runA.trace runB.trace   (files of detrain train --trace)\n"
        "  detrain audit --matrix --model smallcnn --limit-train 256 --steps 1\n"
        "  detrain audit --error --model resnet18 --limit-train 512 --steps 2\n"
        "docs/audit.md");
    a->add_option("--vs", f.vs, "The flags of run B, appended to run A's (one quoted string)");
    a->add_option("--steps", f.steps, "Training steps per run")->capture_default_str();
    a->add_flag("--json", f.json,
                "One JSON object on stdout (first_difference: null when the "
                "runs are bitwise identical)");
    a->add_option("--json-out", f.json_out,
                  "Also write that JSON object to FILE (atomically); the table still prints "
                  "unless --json");
    a->add_option("--traces", f.traces, "Compare two trace files instead of training")->expected(2);
    a->add_flag("--matrix", f.matrix,
                "Check every reduction site x mode under a rerun, --threads 1, permuted rows and "
                "every instruction set (with --device cuda: a rerun, permuted rows and the same "
                "run on the cpu), and evaluation's batch invariance (about 300 short runs of "
                "--steps steps: a minute or more; use a small --limit-train)");
    a->add_flag("--error", f.error,
                "Measure every mode's rounding error against the exact mode at every reduction "
                "site over --steps training steps of the configuration (no --vs)");
    return a;
}

int run_audit_command(const CLI::App& audit, const AuditFlags& f) {
    keep_loaded_dataset(true);  // every run of the audit reads the same data
    const std::vector<std::string> extra = audit.remaining();
    if (!f.traces.empty()) {
        DT_CHECK_VALUE(extra.empty() && f.vs.empty(),
                       "--traces compares two files: give no "
                       "train flags and no --vs with it (got ",
                       join_words(extra), f.vs, ")");
        const TraceFile a = read_trace(f.traces[0]), b = read_trace(f.traces[1]);
        const AuditResult r = compare_trails(a.entries, b.entries);
        const nlohmann::json runs = {{"a", {{"trace", f.traces[0]}, {"header", a.header}}},
                                     {"b", {{"trace", f.traces[1]}, {"header", b.header}}}};
        emit_json(f, audit_json(r, runs));
        if (!f.json) print_audit(stdout, r, f.traces[0], f.traces[1]);
        return 0;
    }
    if (f.error) return run_error_audit(extra, f);
    if (f.matrix) {
        DT_CHECK_VALUE(f.vs.empty(), "audit --matrix makes its own runs B: no --vs");
        const AuditMatrix m = run_audit_matrix(extra, f.steps, [&](const std::string& what) {
            if (!f.json) std::fprintf(stderr, "audit --matrix: %s\n", what.c_str());
        });
        nlohmann::json j = matrix_json(m);
        j["flags"] = join_words(extra);
        emit_json(f, j);
        if (!f.json) print_matrix(stdout, m);
        return 0;
    }
    DT_CHECK_VALUE(!f.vs.empty(),
                   "audit: give --vs \"<flags of run B>\" (e.g. --vs \"--threads "
                   "1\"), or --traces A B");
    std::vector<std::string> b_flags = extra;
    for (const std::string& w : split_words(f.vs)) b_flags.push_back(w);
    const auto [a, b] = audit_configs(extra, b_flags, f.steps);
    if (!f.json)
        std::fprintf(stderr, "audit: run A, %lld steps\n", static_cast<long long>(f.steps));
    const Trail ta = run_traced(a);
    if (!f.json) std::fprintf(stderr, "audit: run B (%s)\n", f.vs.c_str());
    const Trail tb = run_traced(b);
    AuditResult r = compare_trails(ta.entries, tb.entries);
    if (r.first && !r.first->structural) {  // second pass: the values of that one entry
        if (!f.json) std::fprintf(stderr, "audit: rerunning both to the first difference\n");
        const int64_t step = r.first->a.step, index = r.first->a.index;
        TrainConfig a1 = a, b1 = b;
        a1.max_steps = b1.max_steps = step + 1;
        const TrailOptions keep{.keep_step = step, .keep_index = index};
        add_value_differences(run_traced(a1, keep).kept, run_traced(b1, keep).kept, *r.first);
    }
    const std::string a_text = join_words(extra), b_text = join_words(b_flags);
    emit_json(f, audit_json(r, {{"a", {{"flags", a_text}}}, {"b", {{"flags", b_text}}}}));
    if (!f.json) print_audit(stdout, r, a_text.empty() ? "(defaults)" : a_text, b_text);
    return 0;
}

}  // namespace dt
