// SPDX-License-Identifier: MIT
// BatchLoader: each epoch covers every sample exactly once in perm(e) order, batch sizes (last
// batch, drop_last), the exact normalisation formulas, augmentation per sample, equality across
// thread counts, the evaluation helper, validation errors, and permute_rows (the within-batch
// shuffle moves image rows, labels and sample ids together).
#include "datasets/loader.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "datasets/sampler.h"
#include "engine/core/error.h"

namespace dt {
namespace {

// n samples of (C, H, W); pixel k of sample i = (i * 37 + k * 11) mod 256; label i mod classes.
Dataset make_dataset(int64_t n, int c, int h, int w, int classes = 3) {
    Dataset ds;
    ds.name = "toy";
    ds.size = n;
    ds.channels = c;
    ds.height = h;
    ds.width = w;
    ds.num_classes = classes;
    ds.pixels.resize(static_cast<std::size_t>(n * ds.sample_pixels()));
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < ds.sample_pixels(); ++k) {
            ds.pixels[i * ds.sample_pixels() + k] = static_cast<uint8_t>(i * 37 + k * 11);
        }
        ds.labels.push_back(static_cast<int32_t>(i % classes));
    }
    return ds;
}

LoaderConfig config(int64_t batch, bool shuffle = true) {
    LoaderConfig cfg;
    cfg.batch_size = batch;
    cfg.shuffle = shuffle;
    cfg.shuffle_seed = 2024;
    return cfg;
}

TEST(Loader, BatchCountsAndLastBatch) {
    Dataset ds = make_dataset(10, 1, 2, 2);
    BatchLoader keep(ds, config(4));
    EXPECT_EQ(keep.num_batches(), 3);
    EXPECT_EQ(keep.batch(0, 2).size(), 2);
    EXPECT_EQ(keep.batch(0, 2).images.shape(), (Shape{2, 1, 2, 2}));
    EXPECT_EQ(keep.batch(0, 0).labels.shape(), (Shape{4}));
    LoaderConfig drop = config(4);
    drop.drop_last = true;
    EXPECT_EQ(BatchLoader(ds, drop).num_batches(), 2);
    EXPECT_EQ(BatchLoader(ds, config(5)).num_batches(), 2);
    EXPECT_EQ(BatchLoader(ds, config(11)).num_batches(), 1);
}

TEST(Loader, EveryEpochCoversEverySampleOnceInPermutationOrder) {
    Dataset ds = make_dataset(23, 2, 2, 3);
    BatchLoader loader(ds, config(5));
    for (uint64_t epoch : {0u, 1u, 7u}) {
        std::vector<int64_t> ids;
        for (int64_t b = 0; b < loader.num_batches(); ++b) {
            Batch batch = loader.batch(epoch, b);
            const int64_t* labels = batch.labels.data<int64_t>();
            for (int64_t r = 0; r < batch.size(); ++r) {
                EXPECT_EQ(labels[r], ds.labels[batch.sample_ids[r]]);
            }
            ids.insert(ids.end(), batch.sample_ids.begin(), batch.sample_ids.end());
        }
        EXPECT_EQ(ids, epoch_permutation(23, 2024, epoch));
        EXPECT_EQ(ids, loader.order(epoch));
    }
    EXPECT_NE(loader.order(0), loader.order(1));
}

TEST(Loader, NoShuffleIsIndexOrder) {
    Dataset ds = make_dataset(7, 1, 1, 1);
    BatchLoader loader(ds, config(3, false));
    EXPECT_EQ(loader.batch(5, 2).sample_ids, (std::vector<int64_t>{6}));
    EXPECT_EQ(loader.order(3), identity_permutation(7));
}

TEST(Loader, ScaleToUnitIntervalIsFloatDivisionBy255) {
    Dataset ds = make_dataset(6, 2, 3, 3);
    BatchLoader loader(ds, config(4));
    Batch b = loader.batch(1, 0);
    const float* img = b.images.f32();
    const int64_t P = ds.sample_pixels();
    for (int64_t r = 0; r < b.size(); ++r) {
        for (int64_t k = 0; k < P; ++k) {
            const float want = static_cast<float>(ds.pixels[b.sample_ids[r] * P + k]) / 255.0f;
            ASSERT_EQ(std::memcmp(&img[r * P + k], &want, 4), 0) << r << " " << k;
        }
    }
}

TEST(Loader, StandardisationPerChannel) {
    Dataset ds = make_dataset(5, 3, 2, 2);
    LoaderConfig cfg = config(5, false);
    const std::vector<float> mean = {0.4914f, 0.4822f, 0.4465f}, sd = {0.247f, 0.243f, 0.261f};
    cfg.norm = standardize(mean, sd);
    Batch b = BatchLoader(ds, cfg).batch(0, 0);
    const float* img = b.images.f32();
    for (int64_t i = 0; i < 5; ++i) {
        for (int c = 0; c < 3; ++c) {
            for (int k = 0; k < 4; ++k) {
                const int64_t at = i * 12 + c * 4 + k;
                const float x = static_cast<float>(ds.pixels[at]) / 255.0f;
                const float want = (x - mean[c]) / sd[c];
                ASSERT_EQ(std::memcmp(&img[at], &want, 4), 0) << i << " " << c << " " << k;
            }
        }
    }
    // Hand-checked value: byte 255 in channel 0 -> (1 - 0.4914) / 0.247 ~ 2.0591.
    ds.pixels[0] = 255;
    EXPECT_NEAR(BatchLoader(ds, cfg).batch(0, 0).images.f32()[0], 2.0591093, 1e-6);
}

TEST(Loader, AugmentationAppliedPerSampleBeforeNormalising) {
    Dataset ds = make_dataset(9, 2, 4, 5);
    LoaderConfig cfg = config(4);
    cfg.augment = AugmentConfig{2, true, 99};
    BatchLoader loader(ds, cfg);
    const int64_t P = ds.sample_pixels();
    for (int64_t bi = 0; bi < loader.num_batches(); ++bi) {
        Batch b = loader.batch(3, bi);
        for (int64_t r = 0; r < b.size(); ++r) {
            const int64_t id = b.sample_ids[r];
            std::vector<uint8_t> aug(P);
            augment_image(cfg.augment, 3, id, ds.pixels.data() + id * P, aug.data(), 2, 4, 5);
            for (int64_t k = 0; k < P; ++k) {
                ASSERT_EQ(b.images.f32()[r * P + k], static_cast<float>(aug[k]) / 255.0f);
            }
        }
    }
    // Augmentation must actually change something for some sample.
    BatchLoader plain(ds, config(4));
    EXPECT_NE(plain.batch(3, 0).images.to_vector(), loader.batch(3, 0).images.to_vector());
}

TEST(Loader, SameBytesAtAnyThreadCountAndCallOrder) {
    Dataset ds = make_dataset(64, 3, 32, 32, 10);  // big enough for the parallel path
    LoaderConfig cfg = config(48);
    cfg.augment = AugmentConfig{4, true, 5};
    BatchLoader loader(ds, cfg);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::vector<float> want = loader.batch(2, 0).images.to_vector();
    for (int t : {2, 3, 7}) {
        omp_set_num_threads(t);
        EXPECT_EQ(loader.batch(2, 0).images.to_vector(), want) << t << " threads";
    }
    omp_set_num_threads(saved);
    loader.batch(5, 1);  // another epoch in between must not disturb the cached order
    EXPECT_EQ(loader.batch(2, 0).images.to_vector(), want);
}

TEST(Loader, EvalBatchesAreTheWholeSetInOrder) {
    Dataset ds = make_dataset(11, 1, 2, 2);
    std::vector<Batch> bs = eval_batches(ds, 4);
    ASSERT_EQ(bs.size(), 3u);
    EXPECT_EQ(bs[2].sample_ids, (std::vector<int64_t>{8, 9, 10}));
    EXPECT_EQ(bs[0].images.f32()[5], static_cast<float>(ds.pixels[5]) / 255.0f);
    LoaderConfig e = eval_loader_config(4);
    EXPECT_FALSE(e.shuffle);
    EXPECT_FALSE(e.augment.enabled());
    EXPECT_FALSE(e.drop_last);
}

TEST(Loader, Validation) {
    Dataset ds = make_dataset(4, 3, 2, 2);
    EXPECT_THROW(BatchLoader(ds, config(0)), ValueError);
    LoaderConfig bad = config(2);
    bad.norm = standardize({0.5f}, {0.2f});
    EXPECT_THROW(BatchLoader(ds, bad), ValueError);
    bad.norm = standardize({0.5f, 0.5f, 0.5f}, {0.2f, 0.0f, 0.2f});
    EXPECT_THROW(BatchLoader(ds, bad), ValueError);
    bad = config(2);
    bad.augment.crop_padding = -1;
    EXPECT_THROW(BatchLoader(ds, bad), ValueError);
    BatchLoader ok(ds, config(2));
    EXPECT_THROW(ok.batch(0, 2), ValueError);
    EXPECT_THROW(ok.batch(0, -1), ValueError);
    EXPECT_THROW(ok.batch(uint64_t{1} << 32, 0), ValueError);
    ds.labels.pop_back();
    EXPECT_THROW(BatchLoader(ds, config(2)), ValueError);
}

TEST(PermuteRows, MovesImagesLabelsAndIdsTogether) {
    Dataset ds = make_dataset(10, 2, 3, 1);
    const Batch b = BatchLoader(ds, config(5)).batch(1, 1);  // 5 rows of 6 floats
    const std::vector<int64_t> perm = within_batch_permutation(b.size(), 77, 1, 1);
    ASSERT_NE(perm, identity_permutation(b.size()));
    const Batch p = permute_rows(b, perm);
    ASSERT_EQ(p.images.shape(), b.images.shape());
    ASSERT_EQ(p.size(), b.size());
    const int64_t row = 6;
    for (int64_t r = 0; r < b.size(); ++r) {
        const int64_t from = perm[static_cast<std::size_t>(r)];
        EXPECT_EQ(p.sample_ids[r], b.sample_ids[from]) << r;
        EXPECT_EQ(p.labels.data<int64_t>()[r], b.labels.data<int64_t>()[from]) << r;
        EXPECT_EQ(std::memcmp(p.images.f32() + r * row, b.images.f32() + from * row,
                              row * sizeof(float)),
                  0)
            << r;
    }
    // The identity leaves the batch as it was.
    const Batch same = permute_rows(b, identity_permutation(b.size()));
    EXPECT_EQ(same.sample_ids, b.sample_ids);
    EXPECT_EQ(std::memcmp(same.images.f32(), b.images.f32(), b.images.numel() * sizeof(float)), 0);
}

TEST(PermuteRows, RejectsAWrongLengthOrIndex) {
    Dataset ds = make_dataset(4, 1, 2, 2);
    const Batch b = BatchLoader(ds, config(4)).batch(0, 0);
    EXPECT_THROW(permute_rows(b, {0, 1, 2}), ValueError);
    EXPECT_THROW(permute_rows(b, {0, 1, 2, 4}), ValueError);
    EXPECT_THROW(permute_rows(b, {0, -1, 2, 3}), ValueError);
}

}  // namespace
}  // namespace dt
