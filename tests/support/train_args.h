// SPDX-License-Identifier: MIT
// The TrainConfig of `detrain train <args>`: the flags of apps/train/train_config.h parsed by CLI11
// as the command does, then finalized (seeds resolved, values validated). Throws what they throw;
// parse_train_error gives the message instead.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "apps/train/train_config.h"
#include "engine/core/error.h"

namespace dt::test {

inline TrainConfig parse_train(const std::string& args) {
    CLI::App app("test");
    TrainConfig cfg;
    add_train_flags(app, cfg);
    app.parse(args, /*program_name_included=*/false);
    finalize_train_config(cfg);
    return cfg;
}

/// The text of the CLI11 parse error or dt::Error that parse_train(args) throws ("" when it
/// parses): both name the flag and the value.
inline std::string parse_train_error(const std::string& args) {
    try {
        parse_train(args);
    } catch (const CLI::ParseError& e) {
        return e.what();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

/// The flags of `args` parsed but not finalized, and the long names of those given (as
/// `detrain train` passes them to resume_config).
inline TrainConfig parse_train_given(const std::string& args, std::vector<std::string>& given) {
    CLI::App app("test");
    TrainConfig cfg;
    add_train_flags(app, cfg);
    app.parse(args, /*program_name_included=*/false);
    given.clear();
    for (const CLI::Option* o : app.get_options()) {
        if (o->count() > 0) given.push_back(o->get_name());
    }
    return cfg;
}

}  // namespace dt::test
