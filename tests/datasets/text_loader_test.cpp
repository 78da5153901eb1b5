// SPDX-License-Identifier: MIT
// A corpus's windows through BatchLoader (datasets/text_corpus.h, loader.h): every batch row is a
// window's int64 tokens and its targets, rows follow the epoch's permutation, permute_rows moves
// a row's targets with its tokens, and image-only settings are refused for text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/loader.h"
#include "datasets/sampler.h"
#include "datasets/text_corpus.h"
#include "engine/core/error.h"
#include "tests/support/synthetic_text.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

constexpr int64_t kContext = 16;

struct TextData {
    test::TempDir dir;
    TextCorpus corpus;
    DatasetSplits splits;
    TextData() {
        const std::string path = test::write_synthetic_text((dir.path / "c.txt").string(), 4000, 3);
        corpus = load_text_corpus(path, kContext);
        splits = text_dataset(corpus, kContext);
    }
};

TEST(TextLoader, WindowsAreTheExamples) {
    const TextData d;
    const Dataset& tr = d.splits.train;
    EXPECT_EQ(tr.size, corpus_windows(static_cast<int64_t>(d.corpus.train.size()), kContext));
    EXPECT_EQ(d.splits.test.size,
              corpus_windows(static_cast<int64_t>(d.corpus.validation.size()), kContext));
    EXPECT_EQ(tr.context, kContext);
    EXPECT_EQ(tr.width, kContext + 1);
    EXPECT_EQ(tr.num_classes, 256);
    EXPECT_EQ(tr.name, "c.txt/train");
    EXPECT_EQ(d.splits.test.name, "c.txt/validation");
}

TEST(TextLoader, BatchRowsAreWindowsInTheEpochOrder) {
    const TextData d;
    LoaderConfig lc;
    lc.batch_size = 5;
    lc.shuffle = true;
    lc.shuffle_seed = 9;
    const BatchLoader loader(d.splits.train, lc);
    const std::vector<int64_t> perm = epoch_permutation(d.splits.train.size, 9, 2);
    const Batch b = loader.batch(2, 3);
    ASSERT_EQ(b.images.shape(), (Shape{5, kContext}));
    ASSERT_EQ(b.images.dtype(), DType::kI64);
    ASSERT_EQ(b.labels.shape(), (Shape{5 * kContext}));
    std::vector<int32_t> tokens(kContext), targets(kContext);
    for (int64_t r = 0; r < 5; ++r) {
        const int64_t id = perm[static_cast<std::size_t>(15 + r)];
        EXPECT_EQ(b.sample_ids[static_cast<std::size_t>(r)], id);
        corpus_window(d.corpus.train, id, kContext, tokens.data(), targets.data());
        for (int64_t t = 0; t < kContext; ++t) {
            EXPECT_EQ(b.images.data<int64_t>()[r * kContext + t], tokens[t]) << r << "," << t;
            EXPECT_EQ(b.labels.data<int64_t>()[r * kContext + t], targets[t]) << r << "," << t;
        }
    }
}

TEST(TextLoader, PermutedRowsKeepTheirTargets) {
    const TextData d;
    LoaderConfig lc;
    lc.batch_size = 4;
    lc.shuffle = false;
    const BatchLoader loader(d.splits.train, lc);
    const Batch b = loader.batch(0, 1);
    const Batch p = permute_rows(b, {2, 0, 3, 1});
    for (int64_t r = 0; r < 4; ++r) {
        const int64_t from = std::vector<int64_t>{2, 0, 3, 1}[static_cast<std::size_t>(r)];
        EXPECT_EQ(p.sample_ids[static_cast<std::size_t>(r)],
                  b.sample_ids[static_cast<std::size_t>(from)]);
        for (int64_t t = 0; t < kContext; ++t) {
            EXPECT_EQ(p.images.data<int64_t>()[r * kContext + t],
                      b.images.data<int64_t>()[from * kContext + t]);
            EXPECT_EQ(p.labels.data<int64_t>()[r * kContext + t],
                      b.labels.data<int64_t>()[from * kContext + t]);
        }
    }
    // A subset of rows gives the same bytes as those rows of the whole batch.
    const Batch part = loader.batch(0, 1, {3, 1});
    for (int64_t t = 0; t < kContext; ++t) {
        EXPECT_EQ(part.labels.data<int64_t>()[t], b.labels.data<int64_t>()[3 * kContext + t]);
        EXPECT_EQ(part.images.data<int64_t>()[kContext + t],
                  b.images.data<int64_t>()[kContext + t]);
    }
}

TEST(TextLoader, ImageSettingsAreRefusedForText) {
    const TextData d;
    LoaderConfig lc;
    lc.augment.hflip = true;
    EXPECT_THROW(BatchLoader(d.splits.train, lc), ValueError);
    LoaderConfig standard;
    standard.norm.kind = NormKind::kStandardize;
    standard.norm.mean = {0.5f};
    standard.norm.stddev = {0.2f};
    EXPECT_THROW(BatchLoader(d.splits.train, standard), ValueError);
}

TEST(TextLoader, LoadDatasetPointsToTextDataset) {
    EXPECT_THROW(load_dataset("text", "/nonexistent"), ValueError);
    EXPECT_EQ(default_data_dir("text"), default_corpus_path());
}

}  // namespace
}  // namespace dt
