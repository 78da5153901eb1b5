// SPDX-License-Identifier: MIT
// A run's evaluation on the test split: the model's predictions and logits for every test example
// (training off, no tape; batches made ahead on a device), its accuracy and per-class accuracy.
#pragma once
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
};

/// Predictions for every test example of `test` (through `loader`, data-set order) and the
/// accuracies. epoch and dropout_seed fill the forward context as a training step's do.
Evaluation evaluate(Model& model, const BatchLoader& loader, const Dataset& test, uint64_t epoch,
                    uint64_t dropout_seed);

}  // namespace dt
