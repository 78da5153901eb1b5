// SPDX-License-Identifier: MIT
// Finding NaN/Inf in float buffers fast: the gradient checks of the tape and the trainer scan
// every gradient of every step, so the scan is a vectorised test over blocks, and only a block
// that holds a non-finite value is searched element by element.
#pragma once
#include <cstdint>

namespace dt {

/// Index of the first NaN or Inf in p[0 .. n), or -1.
int64_t first_non_finite(const float* p, int64_t n);

}  // namespace dt
