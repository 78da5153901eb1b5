// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// Mean over the batch of -log softmax(logits)[label]: logits (N, K) float32, labels (N) int64
/// with values in [0, K) -> scalar (shape {}). Reduction site: loss (tree over samples). The
/// labels may live on the host whatever the logits' device: they are checked there and uploaded
/// (labels on a GPU are first copied back for the check, one more wait for the device).
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels);

/// Per-row index of the largest logit (first one on ties): (N, K) -> N labels. Not differentiable.
std::vector<int64_t> argmax_rows(const Tensor& logits);

}  // namespace dt
