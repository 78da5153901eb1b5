// SPDX-License-Identifier: MIT
// `detrain study` (contract in study_cmd.h; user documentation in docs/study.md).
#include "apps/study/study_cmd.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/study/study_config.h"
#include "apps/study/study_data.h"
#include "apps/study/study_report.h"
#include "apps/study/study_runner.h"
#include "apps/train/train_config.h"
#include "datasets/dataset.h"
#include "engine/core/error.h"
#include "engine/core/text.h"
#include "engine/io/atomic_file.h"
#include "engine/runtime/collective.h"
#include "models/model.h"

namespace fs = std::filesystem;

namespace dt {

namespace {

using study::Variant;

/// The train flags of the study, parsed and validated as `detrain train` would.
TrainConfig parse_train_flags(const std::vector<std::string>& flags) {
    for (const char* refused : {"--replay", "--out"}) {
        if (std::find(flags.begin(), flags.end(), refused) != flags.end()) {
            throw ValueError(str(refused,
                                 " is not a study flag: a study chooses every replica's "
                                 "output directory under its own --out"));
        }
    }
    return parse_train_flag_list(flags, "study");
}

/// What replica flags need: augmentation/dropout on, the first trainable weight.
study::StudyTrainSetup train_setup(const TrainConfig& cfg) {
    study::StudyTrainSetup s;
    s.model = cfg.model;
    s.augment_on = cfg.augment != "none";
    s.dropout_on = cfg.dropout > 0;
    // The model's shape, without loading the data.
    const std::unique_ptr<Model> model =
        make_model(model_config(cfg, dataset_geometry(cfg.dataset)));
    for (const NamedParam& p : model->params()) {
        if (p.trainable && p.role == ParamRole::kWeight) {
            s.first_weight = p.name;
            s.first_weight_numel = p.tensor.numel();
            break;
        }
    }
    return s;
}

/// "--subgroup NAME=C1,C2,...".
std::vector<study::Subgroup> parse_subgroups(const std::vector<std::string>& texts) {
    std::vector<study::Subgroup> out;
    for (const std::string& t : texts) {
        const std::size_t eq = t.find('=');
        study::Subgroup g;
        g.name = t.substr(0, eq);
        bool ok = eq != std::string::npos && eq > 0 && eq + 1 < t.size();
        if (ok) {
            for (const std::string& c : split_text(t.substr(eq + 1), ',')) {
                std::size_t used = 0;
                try {
                    const int v = std::stoi(c, &used);
                    ok = ok && used == c.size() && v >= 0;
                    g.classes.push_back(v);
                } catch (const std::exception&) {
                    ok = false;
                }
            }
        }
        if (!ok) {
            throw ValueError(str("--subgroup '", t,
                                 "': expected NAME=C1,C2,... with class "
                                 "indices >= 0, e.g. tops=0,2,4,6"));
        }
        out.push_back(std::move(g));
    }
    return out;
}

/// Refuses to continue a study in `dir` whose replicas were trained with other train flags.
/// Records the plan when there is none yet (unless `record` is false).
void check_plan(const fs::path& dir, const std::vector<std::string>& train_flags, bool record) {
    const fs::path plan = dir / "study-plan.json";
    if (fs::exists(plan)) {
        std::ifstream in(plan);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(in);
        } catch (const nlohmann::json::exception& e) {
            throw IoError(str(plan.string(), ": unreadable (", e.what(),
                              "); remove it only if the directory holds no replicas you need"));
        }
        const auto before = j.value("train_flags", std::vector<std::string>{});
        if (before != train_flags) {
            throw ValueError(str("--out ", dir.string(),
                                 " holds a study trained with the train "
                                 "flags\n  ",
                                 join_text(before, " "), "\nbut this command gives\n  ",
                                 join_text(train_flags, " "),
                                 "\nA study's replicas must share their train flags: use another "
                                 "--out, or repeat the earlier flags to continue that study"));
        }
        return;
    }
    if (!record) {
        throw ValueError(
            str("--report-only: ", dir.string(), " holds no study (no study-plan.json)"));
    }
    io::write_file_atomically(plan.string(),
                              nlohmann::json{{"train_flags", train_flags}}.dump(2) + "\n");
}

std::string fmt_seconds(double s) {
    char buf[32];
    if (s < 120) {
        std::snprintf(buf, sizeof buf, "%.0f s", s);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
    }
    return buf;
}

}  // namespace

CLI::App* add_study_command(CLI::App& app, StudyFlags& f) {
    CLI::App* s = app.add_subcommand(
        "study",
        "Train N replicas per noise variant and measure how much each source of noise changes "
        "the trained model (accuracy stddev, churn, weight distance, per-class and subgroup "
        "stddev); writes study.json, summary.csv, plots/*.svg and report.md into --out");
    s->allow_extras();
    s->footer(
        "Every flag that is not a study flag is a train flag (detrain train --help), given to "
        "every replica, e.g.\n  detrain study --replicas 10 --variants paper,sources --epochs 10 "
        "--model smallcnn\nVariants: paper (= control,algo,impl,algo+impl), sources (= init, "
        "shuffle, augment, dropout, init-perturb, impl-atomic, impl-permuted, threads), "
        "batch-order (= batch-order-tree, batch-order-exact), or any of those names; NAME@MODEL "
        "trains a variant with another model (algo@smallcnn-bn).\nResumable: rerun the same "
        "command after an interruption; finished replicas are kept. docs/study.md");
    s->add_option("--replicas", f.replicas, "Replicas per variant (>= 2)")->capture_default_str();
    s->add_option("--variants", f.variants, "Comma-separated variants or groups")
        ->capture_default_str();
    s->add_option("--jobs", f.jobs, "Replicas trained at once (processes)")->capture_default_str();
    s->add_option("--out", f.out, "Study directory (default: runs/study-<model>-<dataset>)");
    s->add_option("--subgroup", f.subgroups,
                  "A subgroup of classes for subgroup metrics: NAME=C1,C2,... (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->expected(1);
    s->add_option("--progress", f.progress, "Progress lines (auto|plain|none)")
        ->capture_default_str();
    s->add_flag("--report-only", f.report_only,
                "Train nothing: write the report from the replicas finished so far (variants "
                "with 2+ of them), e.g. while the study runs in another process");
    return s;
}

namespace {

using DoneMap = std::map<std::string, study::ReplicaDone>;  // by replica directory

/// Every replica's `detrain train` command line, variant by variant, replica 0..N-1.
std::vector<study::ReplicaJob> replica_jobs(const std::vector<Variant>& variants, int replicas,
                                            const fs::path& dir,
                                            const std::vector<std::string>& threads,
                                            const std::vector<std::string>& train_flags,
                                            const study::StudyTrainSetup& setup) {
    std::vector<study::ReplicaJob> jobs;
    for (const Variant& v : variants) {
        for (int i = 0; i < replicas; ++i) {
            study::ReplicaJob j;
            j.label = v.name + " #" + std::to_string(i);
            j.dir = (dir / "replicas" / study::variant_dir_name(v) / std::to_string(i)).string();
            j.args = {"train"};
            j.args.insert(j.args.end(), threads.begin(), threads.end());
            j.args.insert(j.args.end(), train_flags.begin(), train_flags.end());
            const auto vf = study::replica_flags(v, i, setup);
            j.args.insert(j.args.end(), vf.begin(), vf.end());
            j.args.insert(j.args.end(), {"--out", j.dir, "--progress", "none"});
            jobs.push_back(std::move(j));
        }
    }
    return jobs;
}

/// Trains what is not finished, printing one line per replica with the time left.
DoneMap train_replicas(const std::vector<study::ReplicaJob>& jobs, int parallel, bool verbose) {
    DoneMap done;
    const auto start = std::chrono::steady_clock::now();
    std::size_t trained = 0;
    study::run_replicas(jobs, parallel, study::self_executable(), [&](const study::ReplicaDone& d) {
        done[d.job->dir] = d;
        if (!d.reused) ++trained;
        if (!verbose) return;
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::size_t left = jobs.size() - done.size();
        std::string eta;
        if (trained > 0 && left > 0) {
            eta = ", about " +
                  fmt_seconds(elapsed / static_cast<double>(trained) * static_cast<double>(left)) +
                  " left";
        }
        const std::string what =
            d.reused ? "(finished earlier, kept)" : "done in " + fmt_seconds(d.seconds);
        std::fprintf(stderr, "  [%zu/%zu] %s %s%s\n", done.size(), jobs.size(),
                     d.job->label.c_str(), what.c_str(), eta.c_str());
    });
    return done;
}

/// Loads the replicas of every variant and measures them into `report` (with `partial`, only
/// the finished replicas, and only variants with 2+ of them).
void measure(const std::vector<Variant>& variants, int replicas,
             const std::vector<study::ReplicaJob>& jobs, const DoneMap& done, bool partial,
             study::StudyReport& report) {
    std::size_t k = 0, finished = 0;
    for (const Variant& v : variants) {
        study::VariantResult vr;
        vr.variant = v;
        std::vector<study::ReplicaData> data;
        int classes = 0;
        for (int i = 0; i < replicas; ++i, ++k) {
            const study::ReplicaJob& j = jobs[k];
            if (partial && !study::replica_finished(j.dir)) continue;
            ++finished;
            study::LoadedReplica r = study::load_replica(j.dir, v.name, i);
            classes = r.num_classes;
            if (report.class_names.empty()) {
                report.class_names =
                    r.result.at("dataset").value("class_names", std::vector<std::string>{});
            }
            const auto d = done.find(j.dir);
            vr.replicas.push_back(study::replica_record(r.result, i, j.dir,
                                                        d == done.end() ? 0.0 : d->second.seconds,
                                                        d == done.end() || d->second.reused));
            data.push_back(std::move(r.data));
        }
        if (data.size() < 2) {
            report.notes.push_back(str("variant ", v.name, ": ", data.size(), " of ", replicas,
                                       " replicas finished, not reported yet"));
            continue;
        }
        vr.metrics = study::compute_variant_metrics(data, classes, report.subgroups);
        report.variants.push_back(std::move(vr));
    }
    if (partial) {
        const bool all = finished == jobs.size();
        report.notes.insert(report.notes.begin(),
                            all ? str("report rewritten with --report-only; all ", finished,
                                      " replicas had finished")
                                : str("partial report (--report-only): ", finished, " of ",
                                      jobs.size(), " replicas finished"));
        if (report.variants.empty()) {
            throw ValueError(
                str("--report-only: no variant has 2 finished replicas yet in ", report.out_dir));
        }
    }
}

}  // namespace

int run_study_command(const CLI::App& study_app, const StudyFlags& f,
                      const std::vector<std::string>& command_line, std::string* out_dir) {
    const std::vector<std::string> train_flags = study_app.remaining();
    const TrainConfig cfg = parse_train_flags(train_flags);
    if (f.replicas < 2)
        throw ValueError(str("--replicas ", f.replicas,
                             ": need at least 2 (the "
                             "metrics compare pairs of replicas)"));
    if (f.jobs < 1 || f.jobs > 256) throw ValueError(str("--jobs ", f.jobs, ": need 1..256"));
    if (f.progress != "auto" && f.progress != "plain" && f.progress != "none") {
        throw ValueError("--progress '" + f.progress + "': one of auto, plain, none");
    }
    // Threads per replica: what the user gave, else the cores shared among the jobs (a variant
    // may still set its own, e.g. `threads`, or 2 for atomic variants).
    const bool threads_given =
        std::find(train_flags.begin(), train_flags.end(), "--threads") != train_flags.end();
    const int replica_threads =
        threads_given ? cfg.threads : std::max(1, default_thread_count() / f.jobs);
    study::StudyTrainSetup setup = train_setup(cfg);
    setup.threads = replica_threads;
    std::vector<std::string> notes;
    const std::vector<Variant> variants = study::parse_variants(f.variants, setup, notes);

    study::StudyReport report;
    report.out_dir = f.out.empty() ? "runs/study-" + cfg.model + "-" + cfg.dataset : f.out;
    if (out_dir != nullptr) *out_dir = report.out_dir;
    report.command_line = command_line;
    report.train_flags = train_flags;
    report.replicas = f.replicas;
    report.subgroups = parse_subgroups(f.subgroups);
    const fs::path dir(report.out_dir);
    // Under `mpirun -np P detrain study` rank r trains replicas r, r + P, r + 2P, ... (each as
    // its own single-process `train`); rank 0 alone prepares the folder, holds the lock and
    // writes the report once every rank is done.
    Collective& ranks = world();
    const bool writer = ranks.rank() == 0;
    if (!f.report_only && writer) io::prepare_output_dir(dir.string());
    // --report-only only reads replicas (each complete once its result.json exists) and writes
    // the report files atomically: it needs no lock and may run beside the training study.
    std::optional<study::StudyLock> lock;
    if (!f.report_only && writer) lock.emplace(dir.string());
    if (writer) check_plan(dir, train_flags, !f.report_only);
    ranks.barrier();  // the plan is written before any rank trains

    std::vector<std::string> threads;
    if (!threads_given) threads = {"--threads", std::to_string(replica_threads)};
    const std::vector<study::ReplicaJob> jobs =
        replica_jobs(variants, f.replicas, dir, threads, train_flags, setup);
    std::vector<study::ReplicaJob> mine;  // this rank's share
    for (std::size_t k = 0; k < jobs.size(); ++k)
        if (static_cast<int>(k % static_cast<std::size_t>(ranks.size())) == ranks.rank())
            mine.push_back(jobs[k]);

    const bool verbose = f.progress != "none" && (writer || !f.report_only);
    if (verbose && f.report_only) {
        std::fprintf(stderr, "detrain study --report-only: the finished replicas in %s\n",
                     dir.string().c_str());
    } else if (verbose) {
        std::fprintf(stderr,
                     "detrain study: %zu variant(s) x %d replicas = %zu runs, %d at once, "
                     "in %s%s\n",
                     variants.size(), f.replicas, jobs.size(), f.jobs, dir.string().c_str(),
                     ranks.size() > 1 ? str(" (rank ", ranks.rank(), " of ", ranks.size(), ": ",
                                            mine.size(), " of them)")
                                            .c_str()
                                      : "");
        for (const std::string& n : notes) std::fprintf(stderr, "  note: %s\n", n.c_str());
    }
    report.notes = notes;
    // Several replicas at once share the cores: OpenMP threads that spin while waiting would
    // steal them from each other (measured: a 2-thread replica beside two others ran ~15x
    // slower). Children inherit passive waiting unless the user chose a policy.
    if (f.jobs > 1 && std::getenv("OMP_WAIT_POLICY") == nullptr) {
        setenv("OMP_WAIT_POLICY", "passive", 0);
        report.notes.push_back("replicas ran with OMP_WAIT_POLICY=passive (--jobs > 1)");
    }
    const DoneMap done = f.report_only ? DoneMap{} : train_replicas(mine, f.jobs, verbose);
    ranks.barrier();  // every rank's replicas are finished
    if (!writer) return 0;
    measure(variants, f.replicas, jobs, done, f.report_only, report);

    const std::string report_path = study::write_study_outputs(report);
    std::printf("%-22s %10s %8s %9s %10s\n", "variant", "accuracy%", "sd", "churn%", "w-dist");
    for (const study::VariantResult& v : report.variants) {
        std::printf("%-22s %10.2f %8.3f %9.3f %10.4g\n", v.variant.name.c_str(),
                    100 * v.metrics.acc_mean, 100 * v.metrics.acc_std, 100 * v.metrics.churn.mean,
                    v.metrics.weight_distance.mean);
    }
    for (const study::VariantResult& v : report.variants) {
        if (!std::isfinite(v.metrics.val_loss_mean)) continue;  // a language model's
        std::printf("%-22s validation loss %.4f, sd %.4f nats\n", v.variant.name.c_str(),
                    v.metrics.val_loss_mean, v.metrics.val_loss_std);
    }
    std::printf("report: %s\n", report_path.c_str());
    return 0;
}

}  // namespace dt
