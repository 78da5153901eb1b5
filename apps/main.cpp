// SPDX-License-Identifier: MIT
// detrain: command-line entry point. Subcommands: train (apps/train/train_cmd.cpp), study
// (apps/study/study_cmd.cpp), audit (apps/audit/audit_cmd.cpp), info (apps/info/info_cmd.cpp),
// generate (apps/generate/generate_cmd.cpp).
// Exit status: 0 success, 1 a dt::Error (bad data, bad value, I/O failure, diverged training),
// 2 a command-line parse error (unknown flag, missing value, ...).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "apps/audit/audit_cmd.h"
#include "apps/common/version.h"
#include "apps/generate/generate_cmd.h"
#include "apps/info/info_cmd.h"
#include "apps/study/study_cmd.h"
#include "apps/train/train_cmd.h"
#include "apps/train/train_config.h"
#include "engine/core/error.h"
#include "engine/runtime/collective.h"

namespace {

const char* kDescription =
    "detrain: a deterministic deep-learning training engine.\n"
    "Trains image classifiers (small CNNs, ResNet-18) on MNIST, Fashion-MNIST and CIFAR, and a\n"
    "byte-level GPT on a text, with bitwise reproducible results: the same flags and seeds give\n"
    "the same weights on any thread count. Every source of training noise has its own switch "
    "(docs/noise.md).";

// Erases a live progress bar that an error interrupts (a terminal only).
const char* end_of_bar() { return isatty(fileno(stderr)) ? "\r\033[K" : ""; }

}  // namespace

int main(int argc, char** argv) {
    CLI::App app(kDescription, "detrain");
    app.set_version_flag("--version", dt::version_string());
    app.require_subcommand(1);
    app.footer("Run 'detrain <subcommand> --help' for the flags of a subcommand.");

    dt::TrainConfig train_cfg;
    CLI::App* train = dt::add_train_command(app, train_cfg);
    dt::StudyFlags study_flags;
    CLI::App* study = dt::add_study_command(app, study_flags);
    dt::AuditFlags audit_flags;
    CLI::App* audit = dt::add_audit_command(app, audit_flags);
    dt::InfoFlags info_flags;
    CLI::App* info = dt::add_info_command(app, info_flags);
    dt::GenerateFlags generate_flags;
    CLI::App* generate = dt::add_generate_command(app, generate_flags);

    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {  // --help, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "detrain: error: %s\n", e.what());
        std::fprintf(stderr, "Run 'detrain --help' or 'detrain <subcommand> --help' for usage.\n");
        return 2;
    }

    try {
        if (train->parsed()) {
            return dt::run_train_command(*train, train_cfg,
                                         std::vector<std::string>(argv, argv + argc));
        }
        if (study->parsed()) {
            return dt::run_study_command(*study, study_flags,
                                         std::vector<std::string>(argv, argv + argc));
        }
        if (audit->parsed()) return dt::run_audit_command(*audit, audit_flags);
        if (info->parsed()) return dt::run_info_command(info_flags);
        if (generate->parsed()) return dt::run_generate_command(generate_flags);
        return 2;  // unreachable: require_subcommand(1)
    } catch (const dt::Error& e) {
        // A data-parallel run: the other processes may wait in a collective; end them all.
        if (dt::world().size() > 1) dt::world().abort(e.what());
        std::fprintf(stderr, "%sdetrain: error: %s\n", end_of_bar(), e.what());
        return 1;
    } catch (const std::exception& e) {
        if (dt::world().size() > 1) dt::world().abort(std::string("internal error: ") + e.what());
        std::fprintf(stderr, "%sdetrain: internal error: %s\n", end_of_bar(), e.what());
        return 1;
    }
}
