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

/// The KV-cache form, without a gradient: qkv (B, T, 3C) whose tokens t < q0 are cached ->
/// the outputs of queries q0 .. q1-1 only, (B, q1 - q0, C), each with the bits that
/// causal_attention gives its row. Tokens from q1 on are not read (a cache buffer's free rows;
/// q1 < T needs B = 1). The work is that of the rows computed: O(q1) per query.
Tensor causal_attention_rows(const Tensor& qkv, int64_t heads, int64_t q0, int64_t q1);

/// Query rows (sequence x head x token) the attention forward has computed in this process:
/// what a test reads to see that a KV-cache step does a new token's work only.
int64_t attention_query_rows_computed();

}  // namespace dt
