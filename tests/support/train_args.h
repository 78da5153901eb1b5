// SPDX-License-Identifier: MIT
// The TrainConfig of `detrain train <args>`: the flags of apps/train_config.h parsed by CLI11 as
// the command does, then finalized (seeds resolved, values validated). Throws what they throw.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "apps/train_config.h"

namespace dt::test {

inline TrainConfig parse_train(const std::string& args) {
    CLI::App app("test");
    TrainConfig cfg;
    add_train_flags(app, cfg);
    app.parse(args, /*program_name_included=*/false);
    finalize_train_config(cfg);
    return cfg;
}

}  // namespace dt::test
