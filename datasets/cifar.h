// SPDX-License-Identifier: MIT
// CIFAR-10 / CIFAR-100 "binary version" readers (https://www.cs.toronto.edu/~kriz/cifar.html).
// A file is a sequence of fixed-size records: label byte(s), then 3072 pixel bytes in CHW order
// (1024 red, 1024 green, 1024 blue; rows of 32). CIFAR-10 records carry 1 label byte (3073 bytes);
// CIFAR-100 records carry 2, coarse then fine (3074 bytes) and detrain uses the fine label.
// Files are looked up in DIR and in the folder the official tarball extracts to
// (DIR/cifar-10-batches-bin, DIR/cifar-100-binary). Faults throw dt::IoError naming the file.
#pragma once
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace dt {

constexpr int kCifarPixels = 3 * 32 * 32;

/// Layout of one record: `label_bytes` leading label bytes, the used label at `label_index`.
struct CifarRecordFormat {
    int label_bytes = 1;     // 1 for CIFAR-10, 2 for CIFAR-100
    int label_index = 0;     // 0 for CIFAR-10, 1 (fine) for CIFAR-100
    int num_classes = 10;    // range of the used label
    int coarse_classes = 0;  // CIFAR-100: range of byte 0 (20), checked too; 0 = none
    int64_t record_bytes() const { return label_bytes + kCifarPixels; }
};

/// Appends every record of the file at exactly `path` to `out` (pixels and labels; size updated).
void read_cifar_file(const std::string& path, const CifarRecordFormat& format, Dataset& out);

/// Finds `file` in dir or dir/subdir (in that order); throws IoError listing both paths tried.
std::string find_cifar_file(const std::string& dir, const std::string& subdir,
                            const std::string& file);

/// CIFAR-10: data_batch_1..5.bin (train, 50000) and test_batch.bin (test, 10000).
DatasetSplits load_cifar10(const std::string& dir);
/// CIFAR-100: train.bin (50000) and test.bin (10000), fine labels (100 classes).
DatasetSplits load_cifar100(const std::string& dir);

/// airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
const std::vector<std::string>& cifar10_class_names();
/// The 100 fine label names of CIFAR-100 in label order (alphabetical: apple ... worm).
const std::vector<std::string>& cifar100_class_names();

}  // namespace dt
