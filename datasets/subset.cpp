// SPDX-License-Identifier: MIT
// Limit and class imbalance of a data set (contract in subset.h).
#include "datasets/subset.h"

#include <cmath>
#include <vector>

#include "engine/core/error.h"

namespace dt {

void limit_dataset(Dataset& ds, int64_t limit) {
    DT_CHECK_VALUE(limit >= 0, ds.name, ": cannot keep the first ", limit,
                   " examples (expected a count >= 0; 0 keeps all)");
    if (limit > 0 && limit < ds.size) ds.truncate(limit);
}

void keep_fraction_of_class(Dataset& ds, int cls, double fraction) {
    DT_CHECK_VALUE(cls >= 0 && cls < ds.num_classes, "class ", cls, " does not exist in ",
                   ds.name, " (classes 0..", ds.num_classes - 1, ")");
    DT_CHECK_VALUE(fraction > 0 && fraction <= 1, "cannot keep a fraction ", fraction,
                   " of class ", cls, " of ", ds.name, " (expected a fraction in (0, 1])");
    int64_t count = 0;
    for (int32_t label : ds.labels) count += label == cls;
    const auto keep_of_class =
        static_cast<int64_t>(std::ceil(fraction * static_cast<double>(count) - 1e-9));
    std::vector<int64_t> kept;
    int64_t seen = 0;
    for (int64_t i = 0; i < ds.size; ++i) {
        if (ds.labels[static_cast<std::size_t>(i)] != cls || seen++ < keep_of_class) {
            kept.push_back(i);
        }
    }
    ds.keep(kept);
}

}  // namespace dt
