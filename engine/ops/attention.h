// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace dt {

/// Causal multi-head self-attention (kernels/attention.h): qkv (B, T, 3C) float32, per token the
/// queries of every head, then the keys, then the values, C = heads * D -> (B, T, C). Query t
/// attends to keys 0..t with softmax(q . k / sqrt(D)). Reduction sites: attn.fwd (forward),
/// attn.grad (backward, into qkv). A sequence's outputs do not depend on the batch around it.
Tensor causal_attention(const Tensor& qkv, int64_t heads);

}  // namespace dt
