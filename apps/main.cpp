// SPDX-License-Identifier: MIT
// detrain: command-line entry point. The subcommands and their flags: apps/cli.cpp (train,
// study, audit, info, generate).
// Exit status: 0 success, 1 a dt::Error (bad data, bad value, I/O failure, diverged training),
// 2 a command-line parse error (unknown flag, missing value, ...).
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "engine/core/error.h"
#include "engine/runtime/collective.h"

namespace {

// Erases a live progress bar that an error interrupts (a terminal only).
const char* end_of_bar() { return isatty(fileno(stderr)) ? "\r\033[K" : ""; }

}  // namespace

int main(int argc, char** argv) {
    try {
        return dt::run_cli(std::vector<std::string>(argv, argv + argc));
    } catch (const dt::UsageError& e) {
        std::fprintf(stderr, "detrain: error: %s\n", e.what());
        std::fprintf(stderr, "Run 'detrain --help' or 'detrain <subcommand> --help' for usage.\n");
        return 2;
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
