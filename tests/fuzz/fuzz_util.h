// SPDX-License-Identifier: MIT
// Helpers of the libFuzzer targets (tests/fuzz, scripts/fuzz.sh): the parsers under test read
// files, so each input is written to a file of this process first (in /dev/shm when there is
// one: no disk traffic).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace dt::fuzz {

/// A scratch directory of this process, created once.
inline const std::filesystem::path& scratch_dir() {
    static const std::filesystem::path dir = [] {
        const std::filesystem::path shm("/dev/shm");
        const std::filesystem::path base =
            std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path();
        std::filesystem::path d = base / ("detrain-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

/// Writes the input to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, std::size_t size) {
    const std::string path = (scratch_dir() / name).string();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}

}  // namespace dt::fuzz
