// SPDX-License-Identifier: MIT
// The weights hash of a model, reported as `weights_sha256` in result.json: SHA-256 over the
// float32 bytes (little-endian, as stored) of model.trainable() -- every trainable tensor in
// canonical (registration) order, concatenated without names or shapes. Batch-norm running
// statistics are buffers and are not part of it. See dt::io::weights_sha256.
#pragma once
#include <string>

#include "models/model.h"

namespace dt {

/// 64 lowercase hex characters.
std::string weights_sha256(const Model& model);

}  // namespace dt
