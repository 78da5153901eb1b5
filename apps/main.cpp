// SPDX-License-Identifier: MIT
// detrain: command-line entry point. Subcommands: train (apps/train/train_cmd.cpp), study
// (apps/study/study_cmd.cpp), audit (apps/audit/audit_cmd.cpp), info (below).
// Exit status: 0 success, 1 a dt::Error (bad data, bad value, I/O failure, diverged training),
// 2 a command-line parse error (unknown flag, missing value, ...).
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/audit/audit_cmd.h"
#include "apps/common/version.h"
#include "apps/study/study_cmd.h"
#include "apps/train/train_cmd.h"
#include "apps/train/train_config.h"
#include "datasets/dataset.h"
#include "engine/core/error.h"
#include "engine/runtime/collective.h"
#include "engine/runtime/cuda_device.h"
#include "engine/runtime/isa.h"

namespace {

const char* kDescription =
    "detrain: a deterministic deep-learning training engine.\n"
    "Trains image classifiers (small CNNs, ResNet-18) on MNIST, Fashion-MNIST and CIFAR with\n"
    "bitwise reproducible results: the same flags and seeds give the same weights on any thread "
    "count.\nEvery source of training noise has its own switch (docs/noise.md).";

// Erases a live progress bar that an error interrupts (a terminal only).
const char* end_of_bar() { return isatty(fileno(stderr)) ? "\r\033[K" : ""; }

int run_info() {
    std::printf("detrain %s\n", dt::version_string());
    std::printf("  cuda backend    %s\n",
                dt::cuda_device::built()
                    ? "compiled in (--device cuda)"
                    : "not compiled (configure with -DDT_ENABLE_CUDA=ON and nvcc on PATH)");
    std::printf("  cuda device     %s\n", dt::cuda_device::describe().c_str());
    std::printf("  mpi             %s\n",
                dt::mpi_built() ? ("compiled in (mpirun -np P detrain train/study: docs/distributed.md); "
                                   "this process: " + dt::world().describe()).c_str()
                                : "not compiled (scripts/setup.sh installs Open MPI)");
    std::printf("  openmp threads  %d max (%d logical cores; --threads default %d)\n",
                omp_get_max_threads(), omp_get_num_procs(), dt::default_thread_count());
    std::string have;
    for (dt::CpuIsa isa : dt::supported_cpu_isas()) {
        have += std::string(" ") + dt::cpu_isa_name(isa);
    }
    std::printf("  cpu isa         in force %s (--isa, $DT_ISA); this CPU runs:%s\n",
                dt::cpu_isa_name(dt::cpu_isa()), have.c_str());
    std::printf("  data            default directories (--data-dir overrides):\n");
    for (const std::string& name : dt::dataset_names()) {
        const std::string dir = dt::default_data_dir(name);
        std::error_code ec;
        const bool found = std::filesystem::is_directory(dir, ec);
        std::printf("    %-14s %s (%s)\n", name.c_str(), dir.c_str(), found ? "found" : "missing");
    }
    return 0;
}

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
    CLI::App* info = app.add_subcommand(
        "info", "Print the version, compiled backends, CPU features and data directories");

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
        if (info->parsed()) return run_info();
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
