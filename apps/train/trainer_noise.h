// SPDX-License-Identifier: MIT
// Where the noise switches act inside run_training (apps/train/trainer.cpp), kept apart so the loop
// stays readable: --init-perturb on a model and the non-finite checks of the backward pass
// (docs/noise.md). The in-batch order of --shuffle-within-batch is data preparation:
// within_batch_permutation (datasets/sampler.h) and permute_rows (datasets/loader.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/noise_flags.h"
#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "models/model.h"

namespace dt {

/// Applies --init-perturb to the trainable tensors of `model` (after init); returns
/// "NAME[INDEX]: <before> -> <after>" (hex float and decimal). Throws ValueError for an unknown
/// name (listing the valid ones) or an index out of range.
std::string perturb_initial_weight(Model& model, const InitPerturb& p);

/// "at epoch 1, step 3 of 6 (global step 3)" (e, b 0-based).
std::string step_text(int e, int64_t b, int64_t steps);

/// Training stopped on a NaN/Inf loss or gradient.
class TrainingDiverged : public Error {
    using Error::Error;
};

/// loss.backward(), then a check of every trainable gradient. A NaN/Inf throws TrainingDiverged
/// naming the step, the op whose backward produced it (when the tape's finite check is on), the
/// input and whether it is a parameter (by name) or an intermediate tensor.
void backward_checked(const Tensor& loss, const Model& model, double lr, int e, int64_t b,
                      int64_t steps);

}  // namespace dt
