// SPDX-License-Identifier: MIT
// Smaller data sets cut from a loaded one, in data-set order and without randomness, so a cut
// set is a function of the files and the arguments: the first examples (--limit-train,
// --limit-test) and one class thinned to a fraction of its examples (--imbalance). Both keep the
// order of what remains.
#pragma once
#include <cstdint>

#include "datasets/dataset.h"

namespace dt {

/// Keeps the first `limit` examples of `ds`; limit 0, or one >= ds.size, keeps them all.
/// Throws ValueError for a negative limit.
void limit_dataset(Dataset& ds, int64_t limit);

/// Keeps every example of the other classes and, of class `cls`, the first
///   keep = ceil(fraction * count - 1e-9)          (count = examples of cls in ds)
/// in data-set order (the 1e-9 absorbs a product that rounds just above an integer, e.g.
/// 0.07 * 100 = 7.000000000000001 keeps 7; a tiny fraction may keep none). Throws ValueError
/// naming ds.name for a class outside [0, num_classes) or a fraction outside (0, 1].
void keep_fraction_of_class(Dataset& ds, int cls, double fraction);

}  // namespace dt
