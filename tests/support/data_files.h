// SPDX-License-Identifier: MIT
// Writing the data-set tests' files: bytes as they are, or gzip-compressed (zlib), as the readers
// of datasets/ meet them.
#pragma once
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dt::test {

/// Writes bytes to path (its folders made first), gzip-compressed when `gzip`.
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes,
                       bool gzip = false) {
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    if (!folder.empty()) std::filesystem::create_directories(folder);
    if (gzip) {
        gzFile f = gzopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr) << path;
        if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
        gzclose(f);
        return;
    }
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

}  // namespace dt::test
