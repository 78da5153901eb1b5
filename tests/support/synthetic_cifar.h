// SPDX-License-Identifier: MIT
// A tiny synthetic CIFAR-10 set for end-to-end tests, in CIFAR's binary format
// (data_batch_1..5.bin, test_batch.bin: records of one label byte and 3x32x32 pixel bytes,
// channel planes R, G, B). Image i of a file: label (5i + file) mod 10; class k shows a bright
// vertical band at columns 3k, 3k+1 in channel k mod 3 over deterministic LCG noise in [0, 64),
// so a small CNN can learn it in a few steps. `--data-dir DIR --dataset cifar10` finds it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace dt::test {

constexpr int kCifarSide = 32, kCifarChannels = 3, kCifarClasses = 10;

/// One file of `n` records; `file` (0 = test, 1..5 = training batches) seeds its noise.
inline void write_cifar_file(const std::filesystem::path& path, int n, int file) {
    std::ofstream f(path, std::ios::binary);
    uint32_t state = 0x9e3779b9u * static_cast<uint32_t>(file + 1);
    for (int i = 0; i < n; ++i) {
        const int label = (5 * i + file) % kCifarClasses;
        f.put(static_cast<char>(label));
        for (int c = 0; c < kCifarChannels; ++c) {
            for (int y = 0; y < kCifarSide; ++y) {
                for (int x = 0; x < kCifarSide; ++x) {
                    state = state * 1664525u + 1013904223u;  // LCG noise in [0, 64)
                    int v = static_cast<int>(state >> 26);
                    if (c == label % 3 && (x == 3 * label || x == 3 * label + 1)) v += 180;
                    f.put(static_cast<char>(v));
                }
            }
        }
    }
}

/// A CIFAR-10 set in `dir` (created): five training files of `per_file` records, a test file of
/// `n_test`.
inline void write_synthetic_cifar10(const std::filesystem::path& dir, int per_file, int n_test) {
    std::filesystem::create_directories(dir);
    for (int b = 1; b <= 5; ++b)
        write_cifar_file(dir / ("data_batch_" + std::to_string(b) + ".bin"), per_file, b);
    write_cifar_file(dir / "test_batch.bin", n_test, 0);
}

}  // namespace dt::test
