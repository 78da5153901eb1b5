// SPDX-License-Identifier: MIT
// In-memory image classification data sets: uint8 pixels in (N, C, H, W) order plus labels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dt {

/// The shape of a data set's examples and labels: images (channels, height, width), labels in
/// [0, num_classes).
struct DatasetGeometry {
    int channels = 1, height = 28, width = 28;
    int num_classes = 10;
    bool operator==(const DatasetGeometry&) const = default;
};

struct Dataset {
    std::string name;  // "fashion-mnist/train", ...
    int64_t size = 0;
    int channels = 1, height = 28, width = 28;
    int num_classes = 10;
    std::vector<uint8_t> pixels;  // size * channels * height * width, NCHW
    std::vector<int32_t> labels;  // size, each in [0, num_classes)
    std::vector<std::string> class_names;
    // Text (datasets/text_corpus.h): > 0 when every example is a window of context + 1 bytes of a
    // corpus (channels = height = 1, width = context + 1, labels 0): tokens are its first context
    // bytes, targets its last context bytes. 0 for images.
    int64_t context = 0;

    int64_t sample_pixels() const { return int64_t{channels} * height * width; }
    DatasetGeometry geometry() const { return {channels, height, width, num_classes}; }
    /// Keeps the first n examples (n <= size).
    void truncate(int64_t n);
    /// Keeps the examples at `indices` (each in [0, size), strictly increasing), in that order.
    void keep(const std::vector<int64_t>& indices);
};

struct DatasetSplits {
    Dataset train;
    Dataset test;
};

/// Names accepted by load_dataset: fashion-mnist, mnist, cifar10, cifar100; and text, the byte
/// windows of a corpus, which text_dataset (datasets/text_corpus.h) builds for a context.
const std::vector<std::string>& dataset_names();
/// The geometry of a data set of dataset_names(), known without loading it (what load_dataset
/// gives for the published files): fashion-mnist, mnist 1x28x28 and 10 classes; cifar10 3x32x32
/// and 10; cifar100 3x32x32 and 100 (fine labels). Throws ValueError listing the known names.
DatasetGeometry dataset_geometry(const std::string& name);
/// Where a data set lives when --data-dir is not given (Debian package install locations); for
/// text, the corpus file (default_corpus_path()).
std::string default_data_dir(const std::string& name);
/// Loads both splits; throws IoError naming the file and the fault.
DatasetSplits load_dataset(const std::string& name, const std::string& dir);

}  // namespace dt
