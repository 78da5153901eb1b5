// SPDX-License-Identifier: MIT
// Dataset helpers, the known data sets with their geometry, and the name -> loader dispatch
// (idx.cpp for the MNIST family, cifar.cpp).
#include "datasets/dataset.h"

#include <algorithm>

#include "datasets/cifar.h"
#include "datasets/idx.h"
#include "datasets/text_corpus.h"
#include "engine/core/error.h"
#include "engine/core/named_table.h"

namespace dt {

void Dataset::truncate(int64_t n) {
    DT_CHECK_VALUE(n >= 0 && n <= size, name, ": cannot keep the first ", n, " of ", size,
                   " examples");
    size = n;
    pixels.resize(static_cast<std::size_t>(n * sample_pixels()));
    labels.resize(static_cast<std::size_t>(n));
}

void Dataset::keep(const std::vector<int64_t>& indices) {
    const int64_t sp = sample_pixels();
    for (std::size_t j = 0; j < indices.size(); ++j) {
        const int64_t i = indices[j];
        DT_CHECK_VALUE(i >= 0 && i < size && (j == 0 || i > indices[j - 1]), name,
                       ": keep() needs increasing indices in [0, ", size, "), got ", i,
                       " at position ", j);
        // In place: i >= j, so the source is never overwritten before it is read.
        std::copy_n(pixels.begin() + i * sp, sp, pixels.begin() + static_cast<int64_t>(j) * sp);
        labels[j] = labels[static_cast<std::size_t>(i)];
    }
    size = static_cast<int64_t>(indices.size());
    pixels.resize(static_cast<std::size_t>(size * sp));
    labels.resize(static_cast<std::size_t>(size));
}

namespace {

struct KnownDataset {
    const char* name;
    DatasetGeometry geometry;
};

/// Every data set load_dataset knows, in the order of dataset_names().
constexpr KnownDataset kKnownDatasets[] =
    {
        {"fashion-mnist", {1, 28, 28, 10}}, {"mnist", {1, 28, 28, 10}},
        {"cifar10", {3, 32, 32, 10}},       {"cifar100", {3, 32, 32, 100}},
        {"text", {1, 1, 0, 256}},  // width: context + 1, the run's (text_dataset)
};

[[noreturn]] void reject_unknown(const std::string& name) {
    std::string known;
    for (const std::string& n : dataset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ValueError(str("unknown data set '", name, "' (known: ", known, ")"));
}

}  // namespace

const std::vector<std::string>& dataset_names() {
    static const std::vector<std::string> names = names_of(kKnownDatasets);
    return names;
}

DatasetGeometry dataset_geometry(const std::string& name) {
    if (const KnownDataset* d = find_named(kKnownDatasets, name)) return d->geometry;
    reject_unknown(name);
}

std::string default_data_dir(const std::string& name) {
    // Public install locations of Debian's dataset packages (dataset-fashion-mnist, ...).
    if (name == "text") return default_corpus_path();
    return "/usr/share/datasets/" + name;
}

DatasetSplits load_dataset(const std::string& name, const std::string& dir) {
    if (name == "fashion-mnist") return load_fashion_mnist(dir);
    if (name == "mnist") return load_mnist(dir);
    if (name == "cifar10") return load_cifar10(dir);
    if (name == "cifar100") return load_cifar100(dir);
    if (name == "text") {
        throw ValueError(
            "load_dataset: text needs a context (hint: call text_dataset, "
            "datasets/text_corpus.h)");
    }
    reject_unknown(name);
}

}  // namespace dt
