// SPDX-License-Identifier: MIT
// dataset_geometry (datasets/dataset.h): one entry per name of dataset_names(), equal to the
// geometry of that data set as the loaders read it (synthetic files in the published formats),
// and an error listing the known names for any other name.
#include "datasets/dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/cifar.h"
#include "datasets/text_corpus.h"
#include "engine/core/error.h"
#include "tests/support/errors.h"
#include "tests/support/synthetic_cifar.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/synthetic_text.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

using test::has, test::message_of, test::TempDir;

/// CIFAR-100 records (coarse, fine label bytes, then 3072 pixels) with fine labels 0..n-1.
void write_cifar100_file(const fs::path& path, int n) {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < n; ++i) {
        f.put(static_cast<char>(i % 20));
        f.put(static_cast<char>(i));
        for (int k = 0; k < kCifarPixels; ++k) f.put(static_cast<char>(k + i));
    }
}

/// Both splits of `name` loaded from synthetic files in the published formats and geometry.
DatasetSplits load_synthetic(const std::string& name, const fs::path& dir) {
    if (name == "fashion-mnist" || name == "mnist") {
        test::write_synthetic_idx(dir, 5, 3);
    } else if (name == "cifar10") {
        test::write_synthetic_cifar10(dir, 2, 3);
    } else if (name == "cifar100") {
        write_cifar100_file(dir / "train.bin", 4);
        write_cifar100_file(dir / "test.bin", 2);
    } else {
        ADD_FAILURE() << "no synthetic files for " << name << ": add them to this test";
    }
    return load_dataset(name, dir.string());
}

TEST(DatasetGeometry, KnownWithoutLoading) {
    EXPECT_EQ(dataset_geometry("fashion-mnist"), (DatasetGeometry{1, 28, 28, 10}));
    EXPECT_EQ(dataset_geometry("mnist"), (DatasetGeometry{1, 28, 28, 10}));
    EXPECT_EQ(dataset_geometry("cifar10"), (DatasetGeometry{3, 32, 32, 10}));
    EXPECT_EQ(dataset_geometry("cifar100"), (DatasetGeometry{3, 32, 32, 100}));
}

TEST(DatasetGeometry, EqualsWhatTheLoadersRead) {
    for (const std::string& name : dataset_names()) {
        SCOPED_TRACE(name);
        TempDir dir;
        if (name == "text") {  // the windows' width is the run's context + 1 (geometry: 0)
            const std::string path =
                test::write_synthetic_text((dir.path / "t.txt").string(), 3000, 1);
            const DatasetSplits s = text_dataset(load_text_corpus(path, 16), 16);
            DatasetGeometry g = dataset_geometry(name);
            EXPECT_EQ(g.width, 0);
            g.width = 17;
            EXPECT_EQ(s.train.geometry(), g);
            EXPECT_EQ(s.test.geometry(), g);
            continue;
        }
        const DatasetSplits s = load_synthetic(name, dir.path);
        EXPECT_EQ(s.train.geometry(), dataset_geometry(name));
        EXPECT_EQ(s.test.geometry(), dataset_geometry(name));
        EXPECT_EQ(static_cast<int>(s.train.class_names.size()), dataset_geometry(name).num_classes);
    }
}

TEST(DatasetGeometry, UnknownNameListsTheKnownNames) {
    const std::string m = message_of<ValueError>([] { dataset_geometry("imagenet"); });
    EXPECT_TRUE(has(m, "imagenet"));
    for (const std::string& n : dataset_names()) EXPECT_TRUE(has(m, n));
}

}  // namespace
}  // namespace dt
