// SPDX-License-Identifier: MIT
// The data of a training run: both splits of the recipe's data set with --limit-train,
// --limit-test and --imbalance applied (datasets/subset.h), and the opt-in cache of the last data
// set read (keep_loaded_dataset, trainer.h).
#pragma once
#include <string>

#include "apps/train/train_config.h"
#include "datasets/dataset.h"

namespace dt {

/// Both splits of the recipe's data set, read from `data_dir`, with --limit-train, --limit-test
/// and --imbalance applied; a load failure names --data-dir, a class that does not exist names
/// --imbalance.
DatasetSplits load_splits(const TrainRecipe& cfg, const std::string& data_dir);

/// For --dataset text: reads and checks the corpus at `data_file` for --context as load_splits
/// would (IoError naming the file: missing, empty, binary, too short); nothing for images.
void check_text_corpus(const TrainRecipe& cfg, const std::string& data_file);

}  // namespace dt
