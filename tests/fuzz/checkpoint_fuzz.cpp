// SPDX-License-Identifier: MIT
// libFuzzer target: checkpoint reading and restoring (apps/train/checkpoint.h) on arbitrary bytes.
// The checksum would reject almost every mutation at once, so an input that decodes as
// safetensors gets its checksum recomputed before the checkpoint reader sees it: the fuzzer
// then reaches the metadata parsing (position, history, config JSON) and the restore into a
// model and an optimizer. A bad file must end in dt::Error, never a crash, hang or leak.
#include <cstdint>
#include <string>

#include "apps/train/checkpoint.h"
#include "engine/core/error.h"
#include "engine/io/sha256.h"
#include "engine/noise/reduce_sites.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    std::string file = bytes;
    try {
        dt::io::SafetensorsFile f = dt::io::decode_safetensors(bytes, "fuzz input");
        f.metadata.erase("checksum");
        const std::string sum =
            "sha256:" + dt::io::sha256_hex(dt::io::encode_safetensors(f.tensors, f.metadata));
        f.metadata["checksum"] = sum;
        file = dt::io::encode_safetensors(f.tensors, f.metadata);
    } catch (const dt::Error&) {
        // Not even safetensors: the reader must say so.
    }
    dt::fuzz::write_input("checkpoint.safetensors", reinterpret_cast<const uint8_t*>(file.data()),
                          file.size());
    static dt::ModelConfig mc;
    static const std::unique_ptr<dt::Model> model = dt::make_model(mc);
    static const std::unique_ptr<dt::Optimizer> optimizer =
        dt::make_optimizer(dt::OptimizerConfig{}, model->trainable());
    try {
        const dt::Checkpoint ck = dt::read_checkpoint(dt::fuzz::scratch_dir().string());
        const dt::ScopedReduceConfig scope(dt::AccumSpec{});
        dt::restore_checkpoint(ck, *model, *optimizer);
    } catch (const dt::Error&) {
    }
    return 0;
}
