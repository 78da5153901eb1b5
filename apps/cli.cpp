// SPDX-License-Identifier: MIT
#include "apps/cli.h"

#include <CLI/CLI.hpp>

#include "apps/audit/audit_cmd.h"
#include "apps/common/version.h"
#include "apps/generate/generate_cmd.h"
#include "apps/info/info_cmd.h"
#include "apps/study/study_cmd.h"
#include "apps/study/study_runner.h"
#include "apps/train/train_cmd.h"
#include "apps/train/train_config.h"

namespace dt {

namespace {

const char* kDescription =
    "detrain: a deterministic deep-learning training engine.\n"
    "Trains image classifiers (small CNNs, ResNet-18) on MNIST, Fashion-MNIST and CIFAR, and a\n"
    "byte-level GPT on a text, with bitwise reproducible results: the same flags and seeds give\n"
    "the same weights on any thread count. Every source of training noise has its own switch "
    "(docs/noise.md).";

/// The whole table: the app, each subcommand and the structs its flags write into.
struct Cli {
    CLI::App app{kDescription, "detrain"};
    TrainConfig train_cfg;
    StudyFlags study_flags;
    AuditFlags audit_flags;
    InfoFlags info_flags;
    GenerateFlags generate_flags;
    CLI::App *train, *study, *audit, *info, *generate;

    Cli() {
        app.set_version_flag("--version", version_string());
        app.require_subcommand(1);
        app.footer("Run 'detrain <subcommand> --help' for the flags of a subcommand.");
        train = add_train_command(app, train_cfg);
        study = add_study_command(app, study_flags);
        audit = add_audit_command(app, audit_flags);
        info = add_info_command(app, info_flags);
        generate = add_generate_command(app, generate_flags);
    }
};

}  // namespace

int run_cli(const std::vector<std::string>& argv, std::string* out_dir) {
    Cli cli;
    std::vector<std::string> reversed(argv.rbegin(), argv.rend() - (argv.empty() ? 0 : 1));
    try {
        cli.app.parse(reversed);       // CLI11 takes the arguments without argv[0], last first
    } catch (const CLI::Success& e) {  // --help, --version
        return cli.app.exit(e);
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what());
    }
    if (cli.train->parsed()) {
        const int status = run_train_command(*cli.train, cli.train_cfg, argv);
        if (out_dir != nullptr) *out_dir = cli.train_cfg.out;
        return status;
    }
    if (cli.study->parsed()) return run_study_command(*cli.study, cli.study_flags, argv, out_dir);
    if (cli.audit->parsed()) return run_audit_command(*cli.audit, cli.audit_flags);
    if (cli.info->parsed()) return run_info_command(cli.info_flags);
    if (cli.generate->parsed()) return run_generate_command(cli.generate_flags);
    return 2;  // unreachable: require_subcommand(1)
}

void set_detrain_executable(const std::string& path) { study::set_replica_executable(path); }

std::vector<FlagInfo> cli_flags(const std::string& subcommand) {
    Cli cli;
    CLI::App* sub = nullptr;
    try {
        sub = cli.app.get_subcommand(subcommand);
    } catch (const CLI::OptionNotFound&) {
        throw ValueError("unknown subcommand '" + subcommand +
                         "' (expected train, study, audit, info or generate)");
    }
    std::vector<FlagInfo> flags;
    for (const CLI::Option* o : sub->get_options()) {
        if (o->get_lnames().empty() || o->get_lnames().front() == "help") continue;
        FlagInfo f;
        f.name = o->get_lnames().front();
        f.default_value = o->get_default_str();
        f.help = o->get_description();
        f.takes_value = o->get_expected_max() != 0;  // a switch expects none
        f.repeatable = o->get_expected_max() > 1 ||
                       o->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
        flags.push_back(std::move(f));
    }
    return flags;
}

}  // namespace dt
