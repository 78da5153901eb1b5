// SPDX-License-Identifier: MIT
// What the trainer adds to the hash trail of a run (engine/autograd/trace.h) when a TraceSink is
// current (`detrain train --trace FILE`, `detrain audit`): per step, the batch as the model gets
// it (phase data), the parameters' final gradients after every micro-batch and process has been
// added (phase gradients) and the weights after the update (phase update); the tape adds every
// op's output and every gradient in between. Without a current sink these do nothing.
#pragma once
#include <cstdint>

#include "datasets/loader.h"
#include "models/model.h"

namespace dt {

/// Names the model's tensors in the trail (parameters and buffers, by their checkpoint names).
void trace_name_model(const Model& model);
/// Starts the entries of global step `step` (0-based).
void trace_begin_step(int64_t step);
/// The batch (or a process's micro-batch) as the model gets it: images and labels.
void trace_batch(const Batch& batch);
/// --clip-grad-norm's sum of squares (site grad.norm), after the processes' sum.
void trace_grad_norm(const Tensor& sum_of_squares);
/// Every trainable tensor's gradient (phase gradients) or value (phase update), in order.
void trace_parameters(const Model& model, bool gradients);

}  // namespace dt
