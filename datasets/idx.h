// SPDX-License-Identifier: MIT
// IDX reader for MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/ format): a big-endian
// header  [0x00 0x00 type=0x08 ndims] [ndims x uint32 extents]  followed by unsigned bytes.
// Image files have magic 0x00000803 (N, H, W), label files 0x00000801 (N). Files may be plain or
// gzip-compressed (read through zlib's gz* API, which detects the 1f 8b magic itself).
// Every fault throws dt::IoError naming the file, the fault, the values found and a hint.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace dt {

constexpr uint32_t kIdxImageMagic = 0x00000803;  // ubyte, 3 dims (N, H, W)
constexpr uint32_t kIdxLabelMagic = 0x00000801;  // ubyte, 1 dim (N)

struct IdxImages {
    int64_t count = 0;
    int rows = 0, cols = 0;
    std::vector<uint8_t> pixels;  // (count, rows, cols), row-major
};

/// Reads one IDX image file at exactly `path` (plain or gzip).
IdxImages read_idx_images(const std::string& path);
/// Reads one IDX label file at exactly `path`; every label must lie in [0, num_classes).
std::vector<int32_t> read_idx_labels(const std::string& path, int num_classes);

/// Finds `dir/stem.gz` or `dir/stem` (in that order); throws IoError listing both when neither
/// exists. `stem` is a file name without ".gz", e.g. "train-images-idx3-ubyte".
std::string find_idx_file(const std::string& dir, const std::string& stem);

/// Reads the pair  <prefix>-images-idx3-ubyte[.gz], <prefix>-labels-idx1-ubyte[.gz]  from `dir`
/// (prefix "train" or "t10k") into a 1-channel Dataset; counts must match.
Dataset load_idx_split(const std::string& dir, const std::string& prefix, const std::string& name,
                       const std::vector<std::string>& class_names);

/// Both splits of Fashion-MNIST (60000 train, 10000 test, 28x28, 10 classes) from `dir`.
DatasetSplits load_fashion_mnist(const std::string& dir);
/// Both splits of MNIST (same file names and sizes as Fashion-MNIST) from `dir`.
DatasetSplits load_mnist(const std::string& dir);

/// "T-shirt/top", "Trouser", ..., "Ankle boot" (label order of Zalando's release).
const std::vector<std::string>& fashion_mnist_class_names();
/// "0" .. "9".
const std::vector<std::string>& mnist_class_names();

}  // namespace dt
