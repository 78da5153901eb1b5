// SPDX-License-Identifier: MIT
#include "models/weights_hash.h"

#include "engine/io/sha256.h"

namespace dt {

std::string weights_sha256(const Model& model) {
    std::vector<Tensor> host;  // the bytes of the cpu copies, wherever the model lives
    for (const Tensor& t : model.trainable()) host.push_back(t.to(Device::kCpu));
    return io::weights_sha256(host);
}

}  // namespace dt
