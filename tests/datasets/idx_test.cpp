// SPDX-License-Identifier: MIT
// IDX reader: small hand-made files (plain and gzip) in a fresh temporary folder, one test per
// fault asserting the exception type and that the message names the file and the fault; plus the
// real Fashion-MNIST release when the Debian package has installed it (skipped otherwise).
#include "datasets/idx.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "engine/core/error.h"
#include "tests/support/data_files.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

using test::has, test::message_of, test::TempDir, test::write_file;

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& data) {
    std::vector<uint8_t> out;
    auto put = [&](uint32_t v) {
        for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
    };
    put(magic);
    for (uint32_t d : dims) put(d);
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

std::vector<uint8_t> ramp(std::size_t n, int mul = 7) {
    std::vector<uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * mul);
    return v;
}

// ---- good files ----

TEST(Idx, ReadsPlainAndGzipImagesIdentically) {
    TempDir dir;
    const auto bytes = idx_bytes(kIdxImageMagic, {3, 2, 4}, ramp(24));
    write_file(dir / "a", bytes, false);
    write_file(dir / "a.gz", bytes, true);
    for (const std::string& f : {dir / "a", dir / "a.gz"}) {
        IdxImages im = read_idx_images(f);
        EXPECT_EQ(im.count, 3);
        EXPECT_EQ(im.rows, 2);
        EXPECT_EQ(im.cols, 4);
        EXPECT_EQ(im.pixels, ramp(24)) << f;
    }
}

TEST(Idx, ReadsLabels) {
    TempDir dir;
    write_file(dir / "l.gz", idx_bytes(kIdxLabelMagic, {5}, {0, 9, 3, 3, 1}), true);
    EXPECT_EQ(read_idx_labels(dir / "l.gz", 10), (std::vector<int32_t>{0, 9, 3, 3, 1}));
}

TEST(Idx, SplitPrefersGzipAndFallsBackToPlain) {
    TempDir dir;
    // train: gzip images, plain labels; the plain image file is a decoy that must not be read.
    write_file(dir / "train-images-idx3-ubyte.gz", idx_bytes(kIdxImageMagic, {2, 2, 2}, ramp(8)),
               true);
    write_file(dir / "train-images-idx3-ubyte", {1, 2, 3}, false);
    write_file(dir / "train-labels-idx1-ubyte", idx_bytes(kIdxLabelMagic, {2}, {4, 7}), false);
    Dataset ds = load_idx_split(dir.path.string(), "train", "mnist/train", mnist_class_names());
    EXPECT_EQ(ds.name, "mnist/train");
    EXPECT_EQ(ds.size, 2);
    EXPECT_EQ(ds.channels, 1);
    EXPECT_EQ(ds.height, 2);
    EXPECT_EQ(ds.width, 2);
    EXPECT_EQ(ds.num_classes, 10);
    EXPECT_EQ(ds.pixels, ramp(8));
    EXPECT_EQ(ds.labels, (std::vector<int32_t>{4, 7}));
}

TEST(Idx, LoadDatasetDispatchesByName) {
    TempDir dir;
    for (const char* p : {"train", "t10k"}) {
        write_file(dir / (std::string(p) + "-images-idx3-ubyte.gz"),
                   idx_bytes(kIdxImageMagic, {3, 1, 2}, ramp(6)), true);
        write_file(dir / (std::string(p) + "-labels-idx1-ubyte.gz"),
                   idx_bytes(kIdxLabelMagic, {3}, {0, 1, 9}), true);
    }
    DatasetSplits s = load_dataset("fashion-mnist", dir.path.string());
    EXPECT_EQ(s.train.name, "fashion-mnist/train");
    EXPECT_EQ(s.test.name, "fashion-mnist/test");
    EXPECT_EQ(s.test.size, 3);
    EXPECT_EQ(s.train.class_names[9], "Ankle boot");
    EXPECT_EQ(load_dataset("mnist", dir.path.string()).train.class_names[9], "9");
}

TEST(Idx, UnknownDatasetNameListsKnownNames) {
    std::string m = message_of<ValueError>([] { load_dataset("imagenet", "/nonexistent"); });
    EXPECT_TRUE(has(m, "imagenet"));
    for (const std::string& n : dataset_names()) EXPECT_TRUE(has(m, n));
}

TEST(Idx, ClassNames) {
    ASSERT_EQ(fashion_mnist_class_names().size(), 10u);
    EXPECT_EQ(fashion_mnist_class_names()[0], "T-shirt/top");
    EXPECT_EQ(fashion_mnist_class_names()[7], "Sneaker");
    ASSERT_EQ(mnist_class_names().size(), 10u);
    EXPECT_EQ(mnist_class_names()[0], "0");
}

// ---- faults ----

TEST(Idx, MissingFileNamesBothPathsTried) {
    TempDir dir;
    std::string m = message_of<IoError>([&] { load_mnist(dir.path.string()); });
    EXPECT_TRUE(has(m, dir / "train-images-idx3-ubyte.gz"));
    EXPECT_TRUE(has(m, " and " + (dir / "train-images-idx3-ubyte") + " ("));
    EXPECT_TRUE(has(m, "not found"));
}

TEST(Idx, LabelFileReadAsImagesIsBadMagic) {
    TempDir dir;
    write_file(dir / "l.gz", idx_bytes(kIdxLabelMagic, {2}, {1, 2}), true);
    std::string m = message_of<IoError>([&] { read_idx_images(dir / "l.gz"); });
    EXPECT_TRUE(has(m, dir / "l.gz"));
    EXPECT_TRUE(has(m, "bad magic 0x00000801 (expected 0x00000803"));
    EXPECT_TRUE(has(m, "is this a label file?"));
    m = message_of<IoError>([&] {
        write_file(dir / "i", idx_bytes(kIdxImageMagic, {1, 1, 1}, {0}), false);
        read_idx_labels(dir / "i", 10);
    });
    EXPECT_TRUE(has(m, "bad magic 0x00000803 (expected 0x00000801"));
    EXPECT_TRUE(has(m, "is this an image file?"));
}

TEST(Idx, ForeignFileIsBadMagic) {
    TempDir dir;
    write_file(dir / "x", {0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0}, false);
    std::string m = message_of<IoError>([&] { read_idx_labels(dir / "x", 10); });
    EXPECT_TRUE(has(m, dir / "x"));
    EXPECT_TRUE(has(m, "bad magic 0x12345678"));
    EXPECT_TRUE(has(m, "not an IDX file"));
}

TEST(Idx, WrongNumberOfDimensions) {
    TempDir dir;
    write_file(dir / "im", idx_bytes(0x00000802, {2, 4}, ramp(8)), false);
    std::string m = message_of<IoError>([&] { read_idx_images(dir / "im"); });
    EXPECT_TRUE(has(m, dir / "im"));
    EXPECT_TRUE(has(m, "has 2 dimensions (magic 0x00000802), expected 3 (N, H, W)"));
}

TEST(Idx, TruncatedHeader) {
    TempDir dir;
    write_file(dir / "h", {0, 0}, false);
    std::string m = message_of<IoError>([&] { read_idx_images(dir / "h"); });
    EXPECT_TRUE(has(m, dir / "h"));
    EXPECT_TRUE(has(m, "truncated header: the file has 2 bytes"));
    write_file(dir / "h2", idx_bytes(kIdxImageMagic, {5}, {}), false);
    m = message_of<IoError>([&] { read_idx_images(dir / "h2"); });
    EXPECT_TRUE(has(m, "truncated header: expected 16 header bytes, got 8"));
}

TEST(Idx, TruncatedDataPlainAndGzip) {
    TempDir dir;
    auto bytes = idx_bytes(kIdxImageMagic, {3, 2, 3}, ramp(18));
    bytes.resize(bytes.size() - 8);  // 10 of 18 data bytes left
    for (bool gz : {false, true}) {
        const std::string f = dir / (gz ? "t.gz" : "t");
        write_file(f, bytes, gz);
        std::string m = message_of<IoError>([&] { read_idx_images(f); });
        EXPECT_TRUE(has(m, f));
        EXPECT_TRUE(has(m, "truncated data: expected 18 bytes after the 16-byte header"));
        EXPECT_TRUE(has(m, "got 10"));
    }
}

TEST(Idx, AnnouncedSizeIsNotAllocatedBeforeTheDataArrives) {
    // A 16-byte file announcing 1,000,000 images of 28 x 28 (784 MB): the reader must fail on
    // the missing data without first allocating (and zero-filling) the announced size.
    TempDir dir;
    write_file(dir / "big", idx_bytes(kIdxImageMagic, {1000000, 28, 28}, {}), false);
    struct rusage before {
    }, after{};
    getrusage(RUSAGE_SELF, &before);
    std::string m = message_of<IoError>([&] { read_idx_images(dir / "big"); });
    getrusage(RUSAGE_SELF, &after);
    EXPECT_TRUE(has(m, "truncated data: expected 784000000 bytes"));
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 200 * 1024)
        << "peak grew by " << after.ru_maxrss - before.ru_maxrss << " KiB";
}

TEST(Idx, CutGzipStreamIsTruncated) {
    TempDir dir;
    // Incompressible-ish content so that cutting the compressed file loses data bytes.
    std::vector<uint8_t> data(4000);
    uint32_t x = 1;
    for (auto& b : data) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
    const std::string f = dir / "cut.gz";
    write_file(f, idx_bytes(kIdxImageMagic, {10, 20, 20}, data), true);
    fs::resize_file(f, fs::file_size(f) / 2);
    std::string m = message_of<IoError>([&] { read_idx_images(f); });
    EXPECT_TRUE(has(m, f));
    EXPECT_TRUE(has(m, "expected 4000 bytes")) << m;
}

TEST(Idx, TrailingDataIsReported) {
    TempDir dir;
    write_file(dir / "l", idx_bytes(kIdxLabelMagic, {2}, {1, 2, 3, 4, 5}), false);
    std::string m = message_of<IoError>([&] { read_idx_labels(dir / "l", 10); });
    EXPECT_TRUE(has(m, dir / "l"));
    EXPECT_TRUE(has(m, "3 unexpected bytes after the 2 data bytes"));
}

TEST(Idx, LabelOutOfRange) {
    TempDir dir;
    std::vector<uint8_t> labels(400, 3);
    labels[345] = 12;
    write_file(dir / "t10k-labels-idx1-ubyte.gz", idx_bytes(kIdxLabelMagic, {400}, labels), true);
    std::string m =
        message_of<IoError>([&] { read_idx_labels(dir / "t10k-labels-idx1-ubyte.gz", 10); });
    EXPECT_TRUE(has(m, dir / "t10k-labels-idx1-ubyte.gz: label 12 at index 345 is out of range "
                             "[0, 10)"));
}

TEST(Idx, ImageLabelCountMismatch) {
    TempDir dir;
    write_file(dir / "t10k-images-idx3-ubyte", idx_bytes(kIdxImageMagic, {3, 1, 1}, ramp(3)),
               false);
    write_file(dir / "t10k-labels-idx1-ubyte", idx_bytes(kIdxLabelMagic, {2}, {0, 1}), false);
    std::string m = message_of<IoError>(
        [&] { load_idx_split(dir.path.string(), "t10k", "x", mnist_class_names()); });
    EXPECT_TRUE(has(m, dir / "t10k-images-idx3-ubyte has 3 images but"));
    EXPECT_TRUE(has(m, dir / "t10k-labels-idx1-ubyte has 2 labels"));
}

TEST(Idx, AbsurdSizesAreRejectedBeforeAllocating) {
    TempDir dir;
    write_file(dir / "big", idx_bytes(kIdxImageMagic, {1000000000u, 1000, 1000}, {}), false);
    std::string m = message_of<IoError>([&] { read_idx_images(dir / "big"); });
    EXPECT_TRUE(has(m, dir / "big"));
    EXPECT_TRUE(has(m, "absurd image file size 1000000000 x 1000 x 1000"));
    write_file(dir / "zero", idx_bytes(kIdxImageMagic, {5, 0, 28}, {}), false);
    EXPECT_TRUE(has(message_of<IoError>([&] { read_idx_images(dir / "zero"); }), "absurd"));
}

// ---- the real release ----

TEST(Idx, RealFashionMnist) {
    const std::string dir = default_data_dir("fashion-mnist");
    if (!fs::exists(fs::path(dir) / "t10k-labels-idx1-ubyte.gz") &&
        !fs::exists(fs::path(dir) / "t10k-labels-idx1-ubyte")) {
        GTEST_SKIP() << "Fashion-MNIST not installed in " << dir
                     << " (Debian package dataset-fashion-mnist)";
    }
    DatasetSplits s = load_fashion_mnist(dir);
    EXPECT_EQ(s.train.size, 60000);
    EXPECT_EQ(s.test.size, 10000);
    for (const Dataset* ds : {&s.train, &s.test}) {
        EXPECT_EQ(ds->channels, 1);
        EXPECT_EQ(ds->height, 28);
        EXPECT_EQ(ds->width, 28);
        EXPECT_EQ(static_cast<int64_t>(ds->pixels.size()), ds->size * 28 * 28);
        EXPECT_EQ(static_cast<int64_t>(ds->labels.size()), ds->size);
        for (int32_t l : ds->labels) ASSERT_TRUE(l >= 0 && l < 10) << l;
    }
    std::vector<int64_t> count(10, 0);
    for (int32_t l : s.train.labels) ++count[static_cast<std::size_t>(l)];
    for (int c : {0, 3, 9}) EXPECT_EQ(count[static_cast<std::size_t>(c)], 6000) << "class " << c;
}

}  // namespace
}  // namespace dt
