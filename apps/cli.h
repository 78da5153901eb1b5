// SPDX-License-Identifier: MIT
// detrain's command line, in-process: the one table of subcommands and flags (CLI11
// registrations in apps/<command>/) that the `detrain` program (apps/main.cpp) and the Python
// module (python/src/module.cpp) both read.
#pragma once
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace dt {

/// A command line the table refuses (unknown flag, missing or bad value): CLI11's message.
class UsageError : public ValueError {
    using ValueError::ValueError;
};

/// Parses argv (argv[0] the program's name) and runs its subcommand, as `detrain` does:
/// --help and --version print to stdout and return 0. Returns the subcommand's exit status;
/// after a `train` or a `study`, *out_dir (when given) is its directory, defaults resolved.
/// Throws UsageError for a bad command line and dt::Error from the run.
int run_cli(const std::vector<std::string>& argv, std::string* out_dir = nullptr);

/// The detrain executable that `study` starts for its replicas, when the process running the
/// command line is not detrain itself (the Python module); "" = this process's executable.
void set_detrain_executable(const std::string& path);

/// One flag of a subcommand, as the table registers it.
struct FlagInfo {
    std::string name;           // long name without dashes, e.g. "limit-train"
    std::string default_value;  // as text; empty where none is set
    std::string help;
    bool takes_value = true;  // false: a switch such as --no-shuffle
    bool repeatable = false;  // may be given more than once (e.g. --impl-site)
};

/// The flags of `subcommand` (train, study, audit, info, generate) in registration order.
/// ValueError for an unknown subcommand.
std::vector<FlagInfo> cli_flags(const std::string& subcommand);

}  // namespace dt
