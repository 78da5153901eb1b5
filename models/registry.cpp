// SPDX-License-Identifier: MIT
// make_model: the one place that maps a model name to its class (explicit, no self-registration).
#include "models/medium_cnn.h"
#include "models/resnet.h"
#include "models/small_cnn.h"

namespace dt {

std::unique_ptr<Model> make_model(const ModelConfig& cfg) {
    if (cfg.name == "smallcnn") return std::make_unique<SmallCNN>(cfg, false);
    if (cfg.name == "smallcnn-bn") return std::make_unique<SmallCNN>(cfg, true);
    if (cfg.name == "mediumcnn") return std::make_unique<MediumCNN>(cfg);
    if (cfg.name == "resnet18") return std::make_unique<ResNet18>(cfg);
    throw ValueError(str("unknown model '", cfg.name,
                         "' (valid: smallcnn, smallcnn-bn, mediumcnn, resnet18)"));
}

}  // namespace dt
