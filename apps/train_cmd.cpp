// SPDX-License-Identifier: MIT
// Glue of `detrain train`: flags -> TrainConfig -> run_training -> files in --out.
#include "apps/train_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/progress.h"
#include "apps/run_outputs.h"
#include "apps/train_config.h"
#include "apps/trainer.h"

namespace dt {

CLI::App* add_train_command(CLI::App& app, TrainConfig& cfg) {
    CLI::App* train = app.add_subcommand(
        "train",
        "Train a model on an image classification data set and write result.json, "
        "predictions.csv and weights.safetensors into --out");
    train->footer(
        "Defaults follow Zhuang et al. 2021: Adam, lr 4e-4, batch 128, Glorot-uniform init, "
        "inputs in [0,1].\nThe same flags and seeds give bitwise identical weights on any "
        "--threads.");
    add_train_flags(*train, cfg);
    return train;
}

int run_train_command(TrainConfig& cfg, const std::vector<std::string>& command_line) {
    finalize_train_config(cfg);
    prepare_output_dir(cfg.out);  // an unusable --out fails now, not after training
    Progress progress(Progress::parse_mode(cfg.progress, stderr), stderr);
    TrainResult result = run_training(cfg, progress);
    const RunFiles files = write_run_outputs(cfg, result, command_line);
    print_summary(stdout, result, files);
    return 0;
}

}  // namespace dt
