// SPDX-License-Identifier: MIT
// CIFAR-10/100 binary readers on small hand-made files in a fresh temporary folder: record
// layout, file order, both folder layouts, and each fault (type + file + fault in the message).
#include "datasets/cifar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/data_files.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

using test::has, test::message_of, test::TempDir, test::write_file;

// Record r of file `file_id`: label bytes, then pixel i = (file_id * 31 + r * 7 + i) mod 256.
std::vector<uint8_t> records(int file_id, const std::vector<std::vector<uint8_t>>& labels) {
    std::vector<uint8_t> out;
    for (std::size_t r = 0; r < labels.size(); ++r) {
        out.insert(out.end(), labels[r].begin(), labels[r].end());
        for (int i = 0; i < kCifarPixels; ++i) {
            out.push_back(static_cast<uint8_t>(file_id * 31 + static_cast<int>(r) * 7 + i));
        }
    }
    return out;
}

// Writes a complete CIFAR-10 set under `folder`: file b (1..5) holds labels {b-1, b}, test {9}.
void write_cifar10(const std::string& folder) {
    for (int b = 1; b <= 5; ++b) {
        write_file(folder + "/data_batch_" + std::to_string(b) + ".bin",
                   records(b, {{static_cast<uint8_t>(b - 1)}, {static_cast<uint8_t>(b)}}));
    }
    write_file(folder + "/test_batch.bin", records(0, {{9}}));
}

// ---- good files ----

TEST(Cifar, Cifar10InTarballFolderKeepsFileAndRecordOrder) {
    TempDir dir;
    write_cifar10(dir / "cifar-10-batches-bin");
    DatasetSplits s = load_dataset("cifar10", dir.path.string());
    EXPECT_EQ(s.train.name, "cifar10/train");
    ASSERT_EQ(s.train.size, 10);
    EXPECT_EQ(s.test.size, 1);
    EXPECT_EQ(s.train.channels, 3);
    EXPECT_EQ(s.train.height, 32);
    EXPECT_EQ(s.train.width, 32);
    EXPECT_EQ(s.train.labels, (std::vector<int32_t>{0, 1, 1, 2, 2, 3, 3, 4, 4, 5}));
    EXPECT_EQ(s.test.labels, (std::vector<int32_t>{9}));
    ASSERT_EQ(s.train.pixels.size(), 10u * kCifarPixels);
    // Sample 7 is record 1 of data_batch_4.bin; pixel (c=2, y=5, x=3) is byte 2048 + 163.
    const int i = 2 * 1024 + 5 * 32 + 3;
    EXPECT_EQ(s.train.pixels[7 * kCifarPixels + i], static_cast<uint8_t>(4 * 31 + 7 + i));
    EXPECT_EQ(s.train.class_names[0], "airplane");
    EXPECT_EQ(s.train.class_names[9], "truck");
}

TEST(Cifar, Cifar10DirectlyInDir) {
    TempDir dir;
    write_cifar10(dir.path.string());
    EXPECT_EQ(load_cifar10(dir.path.string()).train.size, 10);
}

TEST(Cifar, Cifar100UsesFineLabel) {
    TempDir dir;
    write_file(dir / "cifar-100-binary/train.bin", records(1, {{19, 99}, {0, 42}, {5, 0}}));
    write_file(dir / "cifar-100-binary/test.bin", records(2, {{3, 7}}));
    DatasetSplits s = load_dataset("cifar100", dir.path.string());
    EXPECT_EQ(s.train.labels, (std::vector<int32_t>{99, 42, 0}));
    EXPECT_EQ(s.test.labels, (std::vector<int32_t>{7}));
    EXPECT_EQ(s.train.num_classes, 100);
    EXPECT_EQ(s.train.pixels[kCifarPixels + 10], static_cast<uint8_t>(31 + 7 + 10));
    EXPECT_EQ(s.train.class_names[42], "leopard");
}

TEST(Cifar, ClassNames) {
    EXPECT_EQ(cifar10_class_names().size(), 10u);
    const auto& n = cifar100_class_names();
    ASSERT_EQ(n.size(), 100u);
    EXPECT_EQ(std::set<std::string>(n.begin(), n.end()).size(), 100u);  // no duplicates
    EXPECT_TRUE(std::is_sorted(n.begin(), n.end()));  // the release lists them alphabetically
    EXPECT_EQ(n.front(), "apple");
    EXPECT_EQ(n.back(), "worm");
}

// ---- faults ----

TEST(Cifar, MissingFileListsBothPaths) {
    TempDir dir;
    write_cifar10(dir / "cifar-10-batches-bin");
    fs::remove(dir / "cifar-10-batches-bin/data_batch_4.bin");
    std::string m = message_of<IoError>([&] { load_cifar10(dir.path.string()); });
    EXPECT_TRUE(has(m, "data_batch_4.bin: file not found"));
    EXPECT_TRUE(has(m, dir / "data_batch_4.bin"));
    EXPECT_TRUE(has(m, dir / "cifar-10-batches-bin/data_batch_4.bin"));
}

TEST(Cifar, SizeNotAMultipleOfTheRecord) {
    TempDir dir;
    auto bytes = records(1, {{1}, {2}});
    bytes.push_back(0);
    write_file(dir / "data_batch_1.bin", bytes);
    Dataset ds;
    std::string m = message_of<IoError>(
        [&] { read_cifar_file(dir / "data_batch_1.bin", CifarRecordFormat{}, ds); });
    EXPECT_TRUE(has(m, dir / "data_batch_1.bin"));
    EXPECT_TRUE(has(m, "size 6147 bytes is not a multiple of the record size 3073"));
    EXPECT_TRUE(has(m, "2 whole records and 1 bytes left over"));
}

TEST(Cifar, Cifar10FileReadAsCifar100IsASizeError) {
    TempDir dir;
    write_file(dir / "train.bin", records(1, {{1}, {2}, {3}}));
    write_file(dir / "test.bin", records(1, {{1}}));
    std::string m = message_of<IoError>([&] { load_cifar100(dir.path.string()); });
    EXPECT_TRUE(has(m, dir / "train.bin"));
    EXPECT_TRUE(has(m, "not a multiple of the record size 3074"));
}

TEST(Cifar, EmptyFile) {
    TempDir dir;
    write_file(dir / "test_batch.bin", {});
    Dataset ds;
    std::string m = message_of<IoError>(
        [&] { read_cifar_file(dir / "test_batch.bin", CifarRecordFormat{}, ds); });
    EXPECT_TRUE(has(m, dir / "test_batch.bin: the file is empty"));
}

TEST(Cifar, LabelOutOfRangeLeavesDatasetUnchanged) {
    TempDir dir;
    write_file(dir / "data_batch_2.bin", records(2, {{3}, {10}}));
    Dataset ds;
    std::string m = message_of<IoError>(
        [&] { read_cifar_file(dir / "data_batch_2.bin", CifarRecordFormat{}, ds); });
    EXPECT_TRUE(has(m, dir / "data_batch_2.bin: label 10 in record 1 is out of range [0, 10)"));
    EXPECT_EQ(ds.size, 0);
    EXPECT_TRUE(ds.pixels.empty());
}

TEST(Cifar, Cifar100FineAndCoarseRanges) {
    TempDir dir;
    const CifarRecordFormat c100{2, 1, 100, 20};
    write_file(dir / "a.bin", records(1, {{0, 100}}));
    Dataset ds;
    std::string m = message_of<IoError>([&] { read_cifar_file(dir / "a.bin", c100, ds); });
    EXPECT_TRUE(has(m, dir / "a.bin: label 100 in record 0 is out of range [0, 100)"));
    write_file(dir / "b.bin", records(1, {{0, 1}, {20, 1}}));
    m = message_of<IoError>([&] { read_cifar_file(dir / "b.bin", c100, ds); });
    EXPECT_TRUE(has(m, dir / "b.bin: coarse label 20 in record 1 is out of range [0, 20)"));
}

}  // namespace
}  // namespace dt
