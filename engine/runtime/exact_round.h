// SPDX-License-Identifier: MIT
// dt::round_exact: exact accumulators (kernels/common/accum_exact.h), held as int64 words in a
// tensor as a split batch keeps them (engine/runtime/batch_split.h), rounded once each into a
// float32 tensor on the same device (kernels/exact_round.h): on a GPU they stay there. Not
// differentiable, records nothing.
#pragma once
#include "engine/core/tensor.h"
#include "kernels/common/accum_exact.h"

namespace dt {

/// Words per accumulator in such a tensor.
inline constexpr int64_t kExactAccWords =
    static_cast<int64_t>(sizeof(kernels::common::ExactAcc) / sizeof(int64_t));

/// accs: int64, shape.numel() * kExactAccWords words (any device) -> float32 of `shape`, element
/// i the rounding of accumulator i.
Tensor round_exact(const Tensor& accs, const Shape& shape);

}  // namespace dt
