// SPDX-License-Identifier: MIT
#include "models/model_io.h"

#include <set>

namespace dt {

io::NamedTensors model_named_tensors(const Model& model) {
    io::NamedTensors out;
    out.reserve(model.params().size());
    for (const NamedParam& p : model.params()) out.emplace_back(p.name, p.tensor.to(Device::kCpu));
    return out;
}

void save_model_safetensors(const Model& model, const std::string& path,
                            const io::Metadata& metadata) {
    io::save_safetensors(path, model_named_tensors(model), metadata);
}

void check_model_params(const Model& model, const io::SafetensorsFile& file,
                        const std::string& what) {
    std::set<std::string> names;
    for (const NamedParam& p : model.params()) {
        names.insert(p.name);
        const Tensor* t = file.find(p.name);
        DT_CHECK_IO(t != nullptr, "loading ", model.name(), " from ", what, ": parameter '",
                    p.name, "' (expected ", p.tensor.str(), ") is missing from the file");
        DT_CHECK_IO(t->dtype() == DType::kF32, "loading ", model.name(), " from ", what,
                    ": parameter '", p.name, "' must be float32 (F32), found ", t->str());
        DT_CHECK_SHAPE(t->shape() == p.tensor.shape(), "loading ", model.name(), " from ", what,
                       ": parameter '", p.name, "' has shape ", shape_str(t->shape()),
                       ", expected ", shape_str(p.tensor.shape()),
                       " (hint: was the file saved for another model or input size?)");
    }
    for (const auto& [name, t] : file.tensors) {
        DT_CHECK_IO(names.count(name) == 1, "loading ", model.name(), " from ", what,
                    ": unexpected tensor '", name, "' ", t.str(), " (not a parameter of ",
                    model.name(), ")");
    }
}

void load_model_params(Model& model, const io::SafetensorsFile& file, const std::string& what) {
    check_model_params(model, file, what);
    for (const NamedParam& p : model.params()) {
        Tensor dst = p.tensor;  // shares storage with the model
        dst.copy_from(*file.find(p.name));
    }
}

io::Metadata load_model_safetensors(Model& model, const std::string& path) {
    io::SafetensorsFile file = io::load_safetensors(path);
    load_model_params(model, file, path);
    return file.metadata;
}

}  // namespace dt
