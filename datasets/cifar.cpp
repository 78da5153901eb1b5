// SPDX-License-Identifier: MIT
// CIFAR binary readers: locate each file -> check its size is a whole number of records -> read
// it in one go -> check the labels -> append to the split (files in the order they are listed).
#include "datasets/cifar.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"

namespace dt {

void read_cifar_file(const std::string& path, const CifarRecordFormat& format, Dataset& out) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto size = static_cast<int64_t>(fs::file_size(path, ec));
    DT_CHECK_IO(!ec, path, ": cannot read the file size: ", ec.message(),
                " (hint: does the file exist?)");
    const int64_t rec = format.record_bytes();
    DT_CHECK_IO(size > 0, path, ": the file is empty (expected records of ", rec,
                " bytes; incomplete download?)");
    DT_CHECK_IO(size % rec == 0, path, ": size ", size, " bytes is not a multiple of the record",
                " size ", rec, " (", format.label_bytes, " label byte(s) + ", kCifarPixels,
                " pixels); ", size / rec, " whole records and ", size % rec,
                " bytes left over (hint: truncated download, or a file of the other CIFAR",
                " version?)");

    std::vector<uint8_t> raw(static_cast<std::size_t>(size));
    std::ifstream in(path, std::ios::binary);
    DT_CHECK_IO(in.good(), path, ": cannot open for reading (hint: check permissions)");
    in.read(reinterpret_cast<char*>(raw.data()), size);
    DT_CHECK_IO(in.gcount() == size, path, ": read ", in.gcount(), " of ", size,
                " bytes (hint: the file changed while reading?)");

    // Validate every label before touching `out`, so a bad file leaves it unchanged.
    const int64_t n = size / rec;
    for (int64_t r = 0; r < n; ++r) {
        const uint8_t* head = raw.data() + r * rec;
        const int label = head[format.label_index];
        DT_CHECK_IO(label < format.num_classes, path, ": label ", label, " in record ", r,
                    " is out of range [0, ", format.num_classes, ")",
                    " (hint: a file of the other CIFAR version, or corrupt data?)");
        if (format.coarse_classes > 0) {
            DT_CHECK_IO(head[0] < format.coarse_classes, path, ": coarse label ", int{head[0]},
                        " in record ", r, " is out of range [0, ", format.coarse_classes, ")",
                        " (hint: a CIFAR-10 file read as CIFAR-100?)");
        }
    }
    const std::size_t old_pixels = out.pixels.size();
    out.pixels.resize(old_pixels + static_cast<std::size_t>(n * kCifarPixels));
    out.labels.reserve(out.labels.size() + static_cast<std::size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        const uint8_t* head = raw.data() + r * rec;
        out.labels.push_back(head[format.label_index]);
        std::memcpy(out.pixels.data() + old_pixels + r * kCifarPixels, head + format.label_bytes,
                    kCifarPixels);
    }
    out.size += n;
}

std::string find_cifar_file(const std::string& dir, const std::string& subdir,
                            const std::string& file) {
    namespace fs = std::filesystem;
    const fs::path direct = fs::path(dir) / file;
    const fs::path nested = fs::path(dir) / subdir / file;
    std::error_code ec;
    if (fs::is_regular_file(direct, ec)) return direct.string();
    if (fs::is_regular_file(nested, ec)) return nested.string();
    throw IoError(str(file, ": file not found; tried ", direct.string(), " and ", nested.string(),
                      " (hint: extract the binary version of the data set",
                      " there, or point the data directory at the folder holding it)"));
}

namespace {

Dataset empty_cifar_split(const std::string& name, const std::vector<std::string>& classes) {
    Dataset ds;
    ds.name = name;
    ds.size = 0;
    ds.channels = 3;
    ds.height = 32;
    ds.width = 32;
    ds.num_classes = static_cast<int>(classes.size());
    ds.class_names = classes;
    return ds;
}

}  // namespace

DatasetSplits load_cifar10(const std::string& dir) {
    const std::string sub = "cifar-10-batches-bin";
    const CifarRecordFormat format{1, 0, 10, 0};
    DatasetSplits s{empty_cifar_split("cifar10/train", cifar10_class_names()),
                    empty_cifar_split("cifar10/test", cifar10_class_names())};
    // Locate every file first, so a missing one is reported before seconds of reading.
    std::vector<std::string> train_files;
    for (int b = 1; b <= 5; ++b) {
        train_files.push_back(find_cifar_file(dir, sub, str("data_batch_", b, ".bin")));
    }
    const std::string test_file = find_cifar_file(dir, sub, "test_batch.bin");
    for (const std::string& f : train_files) read_cifar_file(f, format, s.train);
    read_cifar_file(test_file, format, s.test);
    return s;
}

DatasetSplits load_cifar100(const std::string& dir) {
    const std::string sub = "cifar-100-binary";
    const CifarRecordFormat format{2, 1, 100, 20};
    DatasetSplits s{empty_cifar_split("cifar100/train", cifar100_class_names()),
                    empty_cifar_split("cifar100/test", cifar100_class_names())};
    const std::string train_file = find_cifar_file(dir, sub, "train.bin");
    const std::string test_file = find_cifar_file(dir, sub, "test.bin");
    read_cifar_file(train_file, format, s.train);
    read_cifar_file(test_file, format, s.test);
    return s;
}

const std::vector<std::string>& cifar10_class_names() {
    static const std::vector<std::string> names = {
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
    return names;
}

const std::vector<std::string>& cifar100_class_names() {
    // fine_label_names of batches.meta.txt in the binary release, in label order.
    static const std::vector<std::string> names = {
        "apple",       "aquarium_fish", "baby",      "bear",       "beaver",       "bed",
        "bee",         "beetle",        "bicycle",   "bottle",     "bowl",         "boy",
        "bridge",      "bus",           "butterfly", "camel",      "can",          "castle",
        "caterpillar", "cattle",        "chair",     "chimpanzee", "clock",        "cloud",
        "cockroach",   "couch",         "crab",      "crocodile",  "cup",          "dinosaur",
        "dolphin",     "elephant",      "flatfish",  "forest",     "fox",          "girl",
        "hamster",     "house",         "kangaroo",  "keyboard",   "lamp",         "lawn_mower",
        "leopard",     "lion",          "lizard",    "lobster",    "man",          "maple_tree",
        "motorcycle",  "mountain",      "mouse",     "mushroom",   "oak_tree",     "orange",
        "orchid",      "otter",         "palm_tree", "pear",       "pickup_truck", "pine_tree",
        "plain",       "plate",         "poppy",     "porcupine",  "possum",       "rabbit",
        "raccoon",     "ray",           "road",      "rocket",     "rose",         "sea",
        "seal",        "shark",         "shrew",     "skunk",      "skyscraper",   "snail",
        "snake",       "spider",        "squirrel",  "streetcar",  "sunflower",    "sweet_pepper",
        "table",       "tank",          "telephone", "television", "tiger",        "tractor",
        "train",       "trout",         "tulip",     "turtle",     "wardrobe",     "whale",
        "willow_tree", "wolf",          "woman",     "worm"};
    return names;
}

}  // namespace dt
