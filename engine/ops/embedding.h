// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace dt {

/// y[..., :] = table[ids[...], :]: ids int64 of any shape with values in [0, V), on any device
/// (moved to the table's), table (V, C) float32; y has the shape of ids plus [C]. The ids are
/// sequences of `seq_len` positions each (ids.numel() = B * seq_len): token embeddings take the
/// tokens, learned positions take ids = t. Gradient to the table only. Reduction site: embed.grad
/// (kernels/embedding.h: every row sums the rows of its id, one leaf per sequence). In a split
/// batch (engine/runtime/batch_split.h) its exact sums go to the table's accumulators.
Tensor embedding(const Tensor& ids, const Tensor& table, int64_t seq_len);

}  // namespace dt
