// SPDX-License-Identifier: MIT
// Mini-batches of an in-memory Dataset. Batch b of epoch e holds the samples
//   perm(e)[b*B], ..., perm(e)[min((b+1)*B, n) - 1]
// where perm(e) = epoch_permutation(n, shuffle_seed, e) (sampler.h) or the identity when shuffle
// is off; the last batch is smaller unless drop_last. Each sample is augmented (uint8, augment.h,
// keyed by its dataset index and e) and then normalised to float32 (normalization.h); both depend
// only on the sample, so batch(e, b) is a pure function of (dataset, config, e, b) at any thread
// count. permute_rows reorders a batch's rows (--shuffle-within-batch). A text data set
// (Dataset::context > 0) gives its windows' bytes as int64 tokens and targets, nothing applied.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "datasets/augment.h"
#include "datasets/dataset.h"
#include "datasets/normalization.h"
#include "engine/core/tensor.h"

namespace dt {

struct LoaderConfig {
    int64_t batch_size = 64;
    bool shuffle = true;
    uint64_t shuffle_seed = 0;
    AugmentConfig augment;  // crop_padding == 0 && !hflip: no augmentation
    Normalization norm;
    bool drop_last = false;
};

struct Batch {
    Tensor images;                    // (B, C, H, W) float32; text: (B, T) int64 tokens
    Tensor labels;                    // (B) int64; text: (B * T) int64 targets, row-major
    std::vector<int64_t> sample_ids;  // (B) dataset index of each row
    int64_t size() const { return static_cast<int64_t>(sample_ids.size()); }
};

class BatchLoader {
 public:
    /// `ds` is referenced, not copied: it must outlive the loader. Throws ValueError for a bad
    /// batch size, normalisation or augmentation, and for an inconsistent Dataset.
    BatchLoader(const Dataset& ds, LoaderConfig cfg);

    int64_t num_batches() const;
    /// Rows of batch `index` (B, or the remainder for the last batch).
    int64_t batch_rows(int64_t index) const;
    /// Batch `index` in [0, num_batches()) of epoch `epoch` (< 2^32).
    Batch batch(uint64_t epoch, int64_t index) const;
    /// Only rows rows[0], rows[1], ... of that batch, in this order (each in [0, batch_rows)):
    /// the same bits as those rows of batch(epoch, index), reading and augmenting only them
    /// (a data-parallel process's share, apps/train/split_step.h). Throws ValueError for a row
    /// outside the batch.
    Batch batch(uint64_t epoch, int64_t index, const std::vector<int64_t>& rows) const;
    /// The sample order of an epoch (identity when shuffle is off).
    std::vector<int64_t> order(uint64_t epoch) const { return *permutation(epoch); }

    const Dataset& dataset() const { return *ds_; }
    const LoaderConfig& config() const { return cfg_; }

 private:
    struct Cache;  // the last epoch's permutation, shared by concurrent batch() calls
    Batch text_batch(const std::vector<int64_t>& perm, int64_t index,
                     const std::vector<int64_t>& picks) const;
    std::shared_ptr<const std::vector<int64_t>> permutation(uint64_t epoch) const;

    const Dataset* ds_;
    LoaderConfig cfg_;
    std::vector<float> table_;  // (C, 256): the normalised value of each byte, by the formula
    std::shared_ptr<Cache> cache_;
};

/// The batch with its rows in the order `perm` (row r = old row perm[r], e.g. perm =
/// within_batch_permutation, sampler.h): images, labels and sample ids move together, so the
/// batch keeps its samples. Throws ValueError unless perm has one entry per row.
Batch permute_rows(const Batch& b, const std::vector<int64_t>& perm);

/// Loader settings for evaluation: no shuffle, no augmentation, keep the last partial batch.
LoaderConfig eval_loader_config(int64_t batch_size, Normalization norm = {});
/// The whole data set as batches in index order (e.g. the test set, built once).
std::vector<Batch> eval_batches(const Dataset& ds, int64_t batch_size, Normalization norm = {});

}  // namespace dt
