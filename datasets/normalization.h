// SPDX-License-Identifier: MIT
// How uint8 pixels become float32 inputs (the formulas, applied by BatchLoader, loader.h) and the
// per-channel statistics of a split for --normalize standard. The statistics are exact and
// order-free: a histogram of byte values per channel, then sums over the 256 bins in double, so
// they depend on the multiset of pixels only (not on example order or threads).
#pragma once
#include <vector>

#include "datasets/dataset.h"

namespace dt {

enum class NormKind {
    kScale01,      // ORDER: v = float(x) / 255.0f              (torchvision ToTensor)
    kStandardize,  // ORDER: v = (float(x) / 255.0f - mean[c]) / stddev[c], all float32
};                 //        (ToTensor then Normalize(mean, std))

struct Normalization {
    NormKind kind = NormKind::kScale01;
    std::vector<float> mean, stddev;  // one per channel; kStandardize only
};

/// Per-channel standardisation with the given statistics (of x/255).
Normalization standardize(std::vector<float> mean, std::vector<float> stddev);

/// Standardisation by the per-channel mean and population standard deviation of x/255 over all
/// of `ds` (the training split: torchvision's recipe). A constant channel (std 0) gets std 1,
/// i.e. only its mean is subtracted. Throws ValueError for an empty or inconsistent data set.
Normalization channel_statistics(const Dataset& ds);

}  // namespace dt
