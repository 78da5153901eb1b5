// SPDX-License-Identifier: MIT
// Reading a finished replica back for the study's metrics: result.json (accuracy, seeds,
// configuration), predictions.csv (labels, predictions), test_logits.safetensors (softmax
// probabilities, computed here in double) and weights.safetensors (the trainable tensors only,
// in the model's canonical order: the model is rebuilt from the recorded configuration to learn
// which tensors are trainable, so batch-norm running statistics never enter the weight distance).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "apps/study/study_metrics.h"

namespace dt::study {

struct LoadedReplica {
    ReplicaData data;
    nlohmann::json result;  // the replica's result.json
    int num_classes = 0;
};

/// Loads the replica in `dir`. Throws dt::IoError naming the file and the fault.
LoadedReplica load_replica(const std::string& dir, const std::string& variant, int index);

}  // namespace dt::study
