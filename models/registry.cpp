// SPDX-License-Identifier: MIT
// The one list of models: name -> class (explicit, no self-registration). model_names() and
// make_model() both read it, and so do the apps' --model flag and its messages.
#include <iterator>

#include "engine/core/named_table.h"
#include "engine/core/text.h"
#include "models/gpt.h"
#include "models/medium_cnn.h"
#include "models/resnet.h"
#include "models/small_cnn.h"

namespace dt {

namespace {

struct ModelEntry {
    const char* name;
    std::unique_ptr<Model> (*make)(const ModelConfig& cfg);
};

const ModelEntry kModels[] = {
    {"smallcnn",
     [](const ModelConfig& c) -> std::unique_ptr<Model> {
         return std::make_unique<SmallCNN>(c, false);
     }},
    {"smallcnn-bn",
     [](const ModelConfig& c) -> std::unique_ptr<Model> {
         return std::make_unique<SmallCNN>(c, true);
     }},
    {"mediumcnn",
     [](const ModelConfig& c) -> std::unique_ptr<Model> { return std::make_unique<MediumCNN>(c); }},
    {"resnet18",
     [](const ModelConfig& c) -> std::unique_ptr<Model> { return std::make_unique<ResNet18>(c); }},
    {"gpt",
     [](const ModelConfig& c) -> std::unique_ptr<Model> { return std::make_unique<GPT>(c); }},
};

}  // namespace

const std::vector<std::string>& model_names() {
    static const std::vector<std::string> names = names_of(kModels);
    return names;
}

std::unique_ptr<Model> make_model(const ModelConfig& cfg) {
    if (const ModelEntry* m = find_named(kModels, cfg.name)) return m->make(cfg);
    throw ValueError(str("unknown model '", cfg.name, "' (valid: ", join_text(model_names()), ")"));
}

}  // namespace dt
