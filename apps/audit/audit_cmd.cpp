// SPDX-License-Identifier: MIT
// `detrain audit` (contract in audit_cmd.h).
#include "apps/audit/audit_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>

#include "apps/audit/audit_compare.h"
#include "apps/audit/trace_file.h"
#include "apps/train/progress.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "engine/core/error.h"

namespace dt {

namespace {

std::vector<std::string> split_words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& w : v) s += (s.empty() ? "" : " ") + w;
    return s;
}

/// One audited run: its trail, or (keep >= 0) only the values of entry (keep_step, keep).
struct Trail {
    std::vector<TraceEntry> entries;
    std::vector<float> kept;
};

Trail run_traced(const TrainConfig& cfg, int64_t keep_step = -1, int64_t keep = -1) {
    autograd::TraceSink sink;
    if (keep >= 0) {
        sink.keep_values(keep_step, keep);
        sink.on_entry(nullptr, /*store=*/false);
    }
    Progress quiet(Progress::Mode::kNone);
    {
        const autograd::ScopedTrace scope(sink);
        (void)run_training(cfg, quiet);
    }
    return {sink.entries(), sink.kept()};
}

/// Run A's and B's configurations: B's flags are A's with --vs appended (a later flag wins;
/// --impl-site lists add up). `random` seeds are drawn once for both.
std::pair<TrainConfig, TrainConfig> audit_configs(const std::vector<std::string>& a_flags,
                                                  const std::vector<std::string>& b_flags,
                                                  int64_t steps) {
    for (const char* refused : {"--replay", "--resume", "--out", "--checkpoint-every", "--trace"}) {
        for (const auto* flags : {&a_flags, &b_flags}) {
            if (std::find(flags->begin(), flags->end(), refused) != flags->end())
                throw ValueError(str(refused,
                                     " is not an audit flag: an audit trains its runs "
                                     "in memory and writes nothing"));
        }
    }
    std::vector<uint64_t> draws;  // shared by both runs
    std::size_t next_a = 0, next_b = 0;
    auto entropy = [&](std::size_t& next) {
        if (next == draws.size()) draws.push_back(os_entropy64());
        return draws[next++];
    };
    TrainConfig a = parse_train_flag_list(a_flags, "audit");
    TrainConfig b = parse_train_flag_list(b_flags, "audit --vs");
    finalize_train_config(a, [&] { return entropy(next_a); });
    finalize_train_config(b, [&] { return entropy(next_b); });
    for (TrainConfig* c : {&a, &b}) {
        c->max_steps = steps;
        c->checkpoint_every = 0;
        c->progress = "none";
    }
    return {a, b};
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
        "docs/audit.md");
    a->add_option("--vs", f.vs, "The flags of run B, appended to run A's (one quoted string)");
    a->add_option("--steps", f.steps, "Training steps per run")->capture_default_str();
    a->add_flag("--json", f.json,
                "One JSON object on stdout (first_difference: null when the "
                "runs are bitwise identical)");
    a->add_option("--traces", f.traces, "Compare two trace files instead of training")->expected(2);
    return a;
}

int run_audit_command(const CLI::App& audit, const AuditFlags& f) {
    const std::vector<std::string> extra = audit.remaining();
    if (!f.traces.empty()) {
        DT_CHECK_VALUE(extra.empty() && f.vs.empty(),
                       "--traces compares two files: give no "
                       "train flags and no --vs with it (got ",
                       join(extra), f.vs, ")");
        const TraceFile a = read_trace(f.traces[0]), b = read_trace(f.traces[1]);
        const AuditResult r = compare_trails(a.entries, b.entries);
        if (f.json) {
            const nlohmann::json runs = {{"a", {{"trace", f.traces[0]}, {"header", a.header}}},
                                         {"b", {{"trace", f.traces[1]}, {"header", b.header}}}};
            std::printf("%s\n", audit_json(r, runs).dump(2).c_str());
        } else {
            print_audit(stdout, r, f.traces[0], f.traces[1]);
        }
        return 0;
    }
    DT_CHECK_VALUE(!f.vs.empty(),
                   "audit: give --vs \"<flags of run B>\" (e.g. --vs \"--threads "
                   "1\"), or --traces A B");
    DT_CHECK_VALUE(f.steps >= 1, "audit: --steps ", f.steps, ": need at least 1");
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
        add_value_differences(run_traced(a1, step, index).kept, run_traced(b1, step, index).kept,
                              *r.first);
    }
    const std::string a_text = join(extra), b_text = join(b_flags);
    if (f.json) {
        const nlohmann::json runs = {{"a", {{"flags", a_text}}}, {"b", {{"flags", b_text}}}};
        std::printf("%s\n", audit_json(r, runs).dump(2).c_str());
    } else {
        print_audit(stdout, r, a_text.empty() ? "(defaults)" : a_text, b_text);
    }
    return 0;
}

}  // namespace dt
