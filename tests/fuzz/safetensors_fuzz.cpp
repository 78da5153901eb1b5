// SPDX-License-Identifier: MIT
// libFuzzer target: the safetensors reader (engine/io/safetensors.h) and the model loader on
// top of it (models/model_io.h) on arbitrary bytes. A bad file must end in dt::Error; a file the
// reader accepts must re-encode to the same bytes modulo header padding, i.e. decode(encode(x))
// gives x back.
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/io/safetensors.h"
#include "models/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    dt::io::SafetensorsFile file;
    try {
        file = dt::io::decode_safetensors(bytes, "fuzz input");
    } catch (const dt::Error&) {
        return 0;
    }
    // Round trip of what was accepted.
    const dt::io::SafetensorsFile again =
        dt::io::decode_safetensors(dt::io::encode_safetensors(file.tensors, file.metadata), "x");
    if (again.tensors.size() != file.tensors.size() || again.metadata != file.metadata)
        __builtin_trap();
    for (std::size_t i = 0; i < file.tensors.size(); ++i) {
        const dt::Tensor& a = file.tensors[i].second;
        const dt::Tensor& b = again.tensors[i].second;
        if (again.tensors[i].first != file.tensors[i].first || a.shape() != b.shape() ||
            a.dtype() != b.dtype())
            __builtin_trap();
    }
    // Loading into a model checks names, dtypes and shapes: errors only.
    static const std::unique_ptr<dt::Model> model = [] {
        dt::ModelConfig mc;
        return dt::make_model(mc);
    }();
    try {
        dt::load_model_params(*model, file, "fuzz input");
    } catch (const dt::Error&) {
    }
    return 0;
}
