// SPDX-License-Identifier: MIT
// `detrain info`: the version, the compiled backends (CUDA, MPI) and the cuda device or what is
// missing, the OpenMP threads, the CPU's instruction-set paths and the data directories; as text,
// or with --json as one JSON object (for scripts: the GPU check records it).
#pragma once

namespace CLI {
class App;
}

namespace dt {

struct InfoFlags {
    bool json = false;  // one JSON object on stdout instead of the text
};

/// Adds the `info` subcommand.
CLI::App* add_info_command(CLI::App& app, InfoFlags& flags);

/// Runs a parsed `info`; returns the exit status (0).
int run_info_command(const InfoFlags& flags);

}  // namespace dt
