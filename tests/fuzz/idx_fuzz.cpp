// SPDX-License-Identifier: MIT
// libFuzzer target: the IDX readers (datasets/idx.h) on arbitrary bytes, plain or gzip. A bad
// file must end in dt::Error (IoError with a message), never a crash, hang, leak or huge
// allocation.
#include <cstdint>

#include "datasets/idx.h"
#include "engine/core/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string path = dt::fuzz::write_input("input-idx", data, size);
    try {
        const dt::IdxImages images = dt::read_idx_images(path);
        if (images.pixels.size() != static_cast<std::size_t>(images.count) * images.rows *
                                        static_cast<std::size_t>(images.cols))
            __builtin_trap();  // the reader's contract
    } catch (const dt::Error&) {
    }
    try {
        for (int32_t label : dt::read_idx_labels(path, 10))
            if (label < 0 || label >= 10) __builtin_trap();
    } catch (const dt::Error&) {
    }
    return 0;
}
