// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// What a dropout mask is keyed by, so a mask never depends on a sample's position in the batch
/// or on threads: element j of sample `sample_ids[n]` in layer `layer` at `epoch` is dropped iff
/// uniform01(philox(seed, kDropout, ...)) < p (exact counter layout in kernels/dropout.h).
struct DropoutKey {
    uint64_t seed = 0;
    uint64_t epoch = 0;
    uint32_t layer = 0;                // distinguishes dropout layers in one model
    std::vector<int64_t> sample_ids;  // one per sample (size N)
};

/// Inverted dropout on x (N, ...): training -> x * mask / (1 - p); eval or p == 0 -> x.
Tensor dropout(const Tensor& x, float p, bool training, const DropoutKey& key);

}  // namespace dt
