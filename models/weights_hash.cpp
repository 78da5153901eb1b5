// SPDX-License-Identifier: MIT
#include "models/weights_hash.h"

#include "engine/io/sha256.h"

namespace dt {

std::string weights_sha256(const Model& model) { return io::weights_sha256(model.trainable()); }

}  // namespace dt
