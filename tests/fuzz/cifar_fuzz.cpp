// SPDX-License-Identifier: MIT
// libFuzzer target: the CIFAR-10 and CIFAR-100 record readers (datasets/cifar.h) on arbitrary
// bytes. A bad file must end in dt::Error, never a crash, hang or leak; what is read must keep
// the reader's contract (labels in range, pixels and labels of the same count).
#include <cstdint>

#include "datasets/cifar.h"
#include "engine/core/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void read_as(const std::string& path, const dt::CifarRecordFormat& format) {
    dt::Dataset ds;
    ds.channels = 3, ds.height = 32, ds.width = 32, ds.num_classes = format.num_classes;
    try {
        dt::read_cifar_file(path, format, ds);
    } catch (const dt::Error&) {
        return;
    }
    if (ds.labels.size() != static_cast<std::size_t>(ds.size) ||
        ds.pixels.size() != static_cast<std::size_t>(ds.size) * dt::kCifarPixels)
        __builtin_trap();
    for (int32_t label : ds.labels)
        if (label < 0 || label >= format.num_classes) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string path = dt::fuzz::write_input("input-cifar", data, size);
    read_as(path, dt::CifarRecordFormat{});               // CIFAR-10
    read_as(path, dt::CifarRecordFormat{2, 1, 100, 20});  // CIFAR-100 (fine label)
    return 0;
}
