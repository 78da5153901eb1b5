// SPDX-License-Identifier: MIT
// `detrain generate`: text from a trained GPT run (its result.json and weights.safetensors),
// through the KV cache of models/generate.h, with the run's reduction modes. Prints the prompt
// and the continuation, or with --json one object with the bytes and their log-probabilities.
#pragma once
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace dt {

struct GenerateFlags {
    std::string from;          // the run's --out
    std::string prompt;        // bytes to continue
    int64_t tokens = 200;      // new bytes
    double temperature = 0.8;  // 0: greedy
    uint64_t seed = 0;
    std::string device = "cpu";
    int threads = 0;  // 0: the default (all cores)
    bool json = false;
};

/// Adds the `generate` subcommand.
CLI::App* add_generate_command(CLI::App& app, GenerateFlags& flags);

/// Runs a parsed `generate`; returns the exit status. Throws dt::Error for a run that is not a
/// GPT's, missing files or bad values, each naming the file or flag.
int run_generate_command(const GenerateFlags& flags);

}  // namespace dt
