// SPDX-License-Identifier: MIT
// A run's evaluation on the test split: the model's predictions and logits for every test example
// (training off, no tape; batches made ahead on a device), its accuracy and per-class accuracy.
// A language model (rows_per_sample() = T > 1) is evaluated per token: row i*T + t of the
// predictions, logits and targets is token t of validation window i, the accuracy is the
// fraction of next bytes predicted, and the loss is the mean cross-entropy per token.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "models/model.h"

namespace dt {

struct Evaluation {
    double accuracy = 0;
    std::vector<double> per_class;     // NaN for a class without test examples
    std::vector<int64_t> predictions;  // by test index
    std::vector<float> logits;         // (test size, classes) by test index
    // Language models: the label of every row (its target byte) and the mean of -ln p(target)
    // over every row, in nats. NaN for a classifier.
    std::vector<int32_t> targets;
    double loss = std::nan("");
};

/// Predictions for every test example of `test` (through `loader`, data-set order) and the
/// accuracies. epoch and dropout_seed fill the forward context as a training step's do.
Evaluation evaluate(Model& model, const BatchLoader& loader, const Dataset& test, uint64_t epoch,
                    uint64_t dropout_seed);

}  // namespace dt
