// SPDX-License-Identifier: MIT
#include "datasets/dataset.h"

#include "engine/core/error.h"

namespace dt {

void Dataset::truncate(int64_t n) {
    DT_CHECK_VALUE(n >= 0 && n <= size, name, ": cannot keep the first ", n, " of ", size,
                   " examples");
    size = n;
    pixels.resize(static_cast<std::size_t>(n * sample_pixels()));
    labels.resize(static_cast<std::size_t>(n));
}

const std::vector<std::string>& dataset_names() {
    static const std::vector<std::string> names = {"fashion-mnist", "mnist", "cifar10",
                                                   "cifar100"};
    return names;
}

std::string default_data_dir(const std::string& name) {
    // Public install locations of Debian's dataset packages (dataset-fashion-mnist, ...).
    return "/usr/share/datasets/" + name;
}

}  // namespace dt
