// SPDX-License-Identifier: MIT
// IDX reader: header (magic, extents) -> size checks -> data bytes -> trailing-data check -> labels
// range check. All reads go through zlib's gzread, which passes plain files through unchanged.
#include "datasets/idx.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"

namespace dt {

namespace {

constexpr int64_t kMaxCount = int64_t{1} << 30;  // a billion examples: beyond any IDX release
constexpr int kMaxSide = 4096;                   // pixels per image side
constexpr int64_t kMaxBytes = int64_t{1} << 34;  // 16 GiB of pixels

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}

// An open gz stream that closes itself; gzread handles plain and gzip files alike.
class GzReader {
 public:
    explicit GzReader(const std::string& path) : path_(path) {
        file_ = gzopen(path.c_str(), "rb");
        DT_CHECK_IO(file_ != nullptr, path, ": cannot open for reading",
                    " (hint: check the file's permissions)");
        gzbuffer(file_, 1 << 18);
    }
    ~GzReader() { gzclose(file_); }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;

    /// Reads up to n bytes into dst; returns how many were read (fewer only at end of data).
    int64_t read(void* dst, int64_t n) {
        auto* out = static_cast<unsigned char*>(dst);
        int64_t done = 0;
        while (done < n) {
            // gzread takes an unsigned int length: read in chunks below INT_MAX.
            unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - done, 1 << 30));
            int got = gzread(file_, out + done, chunk);
            if (got < 0) {
                int code = 0;
                const char* msg = gzerror(file_, &code);
                throw IoError(str(path_, ": read error after ", done, " bytes: ", msg,
                                  " (hint: corrupt gzip stream? re-download the file)"));
            }
            if (got == 0) break;
            done += got;
        }
        return done;
    }

    /// Counts the bytes left until the end of the data (used to report trailing garbage).
    int64_t count_rest() {
        std::vector<unsigned char> buf(1 << 16);
        int64_t total = 0;
        for (int64_t got; (got = read(buf.data(), static_cast<int64_t>(buf.size()))) > 0;) {
            total += got;
        }
        return total;
    }

    /// " (gzip stream: <zlib message>)" when zlib saw an error such as an early end, else "".
    std::string gz_note() {
        int code = Z_OK;
        const char* msg = gzerror(file_, &code);
        if (code == Z_OK || msg == nullptr || *msg == '\0') return "";
        return str(" (gzip stream: ", msg, ")");
    }

 private:
    std::string path_;
    gzFile file_ = nullptr;
};

uint32_t big_endian32(const unsigned char* b) {
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// Reads the magic and extents; `want_magic` selects image (3 dims) or label (1 dim) files.
std::vector<int64_t> read_header(GzReader& in, const std::string& path, uint32_t want_magic) {
    const bool images = want_magic == kIdxImageMagic;
    const char* kind = images ? "an IDX image file" : "an IDX label file";
    const char* other = images ? "a label file" : "an image file";
    unsigned char b[4];
    int64_t got = in.read(b, 4);
    DT_CHECK_IO(got == 4, path, ": truncated header: the file has ", got,
                " bytes, an IDX header needs at least 4", in.gz_note(),
                " (hint: empty or incomplete download?)");
    uint32_t magic = big_endian32(b);
    if (magic != want_magic) {
        uint32_t other_magic = images ? kIdxLabelMagic : kIdxImageMagic;
        DT_CHECK_IO(magic != other_magic, path, ": bad magic ", hex32(magic), " (expected ",
                    hex32(want_magic), " for ", kind, "; is this ", other, "?)");
        // Right element type (0x08 = unsigned byte) but another rank: name the rank.
        DT_CHECK_IO((magic & 0xFFFFFF00u) != 0x00000800u, path, ": has ", magic & 0xFFu,
                    " dimensions (magic ", hex32(magic), "), expected ", want_magic & 0xFFu,
                    images ? " (N, H, W)" : " (N)", " for ", kind);
        DT_CHECK_IO(false, path, ": bad magic ", hex32(magic), " (expected ", hex32(want_magic),
                    " for ", kind, "; not an IDX file, or a corrupt download?)");
    }
    const int ndims = static_cast<int>(want_magic & 0xFFu);
    std::vector<int64_t> dims(static_cast<std::size_t>(ndims));
    for (int d = 0; d < ndims; ++d) {
        got = in.read(b, 4);
        DT_CHECK_IO(got == 4, path, ": truncated header: expected ", 4 + 4 * ndims,
                    " header bytes, got ", 4 + 4 * d + got, in.gz_note(),
                    " (hint: incomplete download?)");
        dims[static_cast<std::size_t>(d)] = big_endian32(b);
    }
    return dims;
}

// Reads exactly `expected` data bytes after a `header_bytes` header, then insists on end of data.
// The buffer grows by chunks as the data arrives, so a header that announces more than the file
// holds costs at most one chunk beyond the file, never the announced size (fuzzing found a
// 24-byte file asking for 9.5 GB).
std::vector<uint8_t> read_body(GzReader& in, const std::string& path, int64_t expected,
                               int64_t header_bytes, const std::string& what) {
    constexpr int64_t kChunk = int64_t{64} << 20;
    std::vector<uint8_t> data;
    int64_t got = 0;
    while (got < expected) {
        const int64_t want = std::min(kChunk, expected - got);
        data.resize(static_cast<std::size_t>(got + want));
        const int64_t n = in.read(data.data() + got, want);
        got += n;
        if (n < want) break;
    }
    data.resize(static_cast<std::size_t>(got));
    DT_CHECK_IO(got == expected, path, ": truncated data: expected ", expected, " bytes after the ",
                header_bytes, "-byte header (", what, "), got ", got, in.gz_note(),
                " (hint: incomplete download? fetch the file again)");
    int64_t extra = in.count_rest();
    DT_CHECK_IO(extra == 0, path, ": ", extra, " unexpected bytes after the ", expected,
                " data bytes announced by the header (", what,
                ") (hint: corrupt header or concatenated files?)");
    return data;
}

}  // namespace

// ---- files ----

IdxImages read_idx_images(const std::string& path) {
    GzReader in(path);
    std::vector<int64_t> dims = read_header(in, path, kIdxImageMagic);
    const int64_t n = dims[0], h = dims[1], w = dims[2];
    DT_CHECK_IO(n <= kMaxCount && h >= 1 && h <= kMaxSide && w >= 1 && w <= kMaxSide &&
                    n * h * w <= kMaxBytes,
                path, ": absurd image file size ", n, " x ", h, " x ", w, " (expected at most ",
                kMaxCount, " images of 1..", kMaxSide, " pixels per side, at most ", kMaxBytes,
                " bytes; corrupt header?)");
    IdxImages out;
    out.count = n;
    out.rows = static_cast<int>(h);
    out.cols = static_cast<int>(w);
    out.pixels = read_body(in, path, n * h * w, 16, str(n, " x ", h, " x ", w));
    return out;
}

std::vector<int32_t> read_idx_labels(const std::string& path, int num_classes) {
    GzReader in(path);
    std::vector<int64_t> dims = read_header(in, path, kIdxLabelMagic);
    const int64_t n = dims[0];
    DT_CHECK_IO(n <= kMaxCount, path, ": absurd label count ", n, " (expected at most ", kMaxCount,
                "; corrupt header?)");
    std::vector<uint8_t> raw = read_body(in, path, n, 8, str(n, " labels"));
    std::vector<int32_t> labels(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        DT_CHECK_IO(raw[i] < num_classes, path, ": label ", int{raw[i]}, " at index ", i,
                    " is out of range [0, ", num_classes, ")",
                    " (hint: a file of another data set, or an image file?)");
        labels[i] = raw[i];
    }
    return labels;
}

std::string find_idx_file(const std::string& dir, const std::string& stem) {
    namespace fs = std::filesystem;
    const fs::path gz = fs::path(dir) / (stem + ".gz");
    const fs::path plain = fs::path(dir) / stem;
    std::error_code ec;
    if (fs::is_regular_file(gz, ec)) return gz.string();
    if (fs::is_regular_file(plain, ec)) return plain.string();
    throw IoError(str(stem, ": file not found; tried ", gz.string(), " and ", plain.string(),
                      " (hint: download the data set there, or point the data directory at the",
                      " folder that holds it)"));
}

// ---- splits ----

Dataset load_idx_split(const std::string& dir, const std::string& prefix, const std::string& name,
                       const std::vector<std::string>& class_names) {
    const std::string image_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
    const std::string label_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
    const int num_classes = static_cast<int>(class_names.size());
    IdxImages images = read_idx_images(image_path);
    std::vector<int32_t> labels = read_idx_labels(label_path, num_classes);
    DT_CHECK_IO(images.count == static_cast<int64_t>(labels.size()), image_path, " has ",
                images.count, " images but ", label_path, " has ", labels.size(),
                " labels (hint: files from different splits or releases?)");
    Dataset ds;
    ds.name = name;
    ds.size = images.count;
    ds.channels = 1;
    ds.height = images.rows;
    ds.width = images.cols;
    ds.num_classes = num_classes;
    ds.pixels = std::move(images.pixels);
    ds.labels = std::move(labels);
    ds.class_names = class_names;
    return ds;
}

DatasetSplits load_fashion_mnist(const std::string& dir) {
    return {load_idx_split(dir, "train", "fashion-mnist/train", fashion_mnist_class_names()),
            load_idx_split(dir, "t10k", "fashion-mnist/test", fashion_mnist_class_names())};
}

DatasetSplits load_mnist(const std::string& dir) {
    return {load_idx_split(dir, "train", "mnist/train", mnist_class_names()),
            load_idx_split(dir, "t10k", "mnist/test", mnist_class_names())};
}

const std::vector<std::string>& fashion_mnist_class_names() {
    static const std::vector<std::string> names = {
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    return names;
}

const std::vector<std::string>& mnist_class_names() {
    static const std::vector<std::string> names = {"0", "1", "2", "3", "4",
                                                   "5", "6", "7", "8", "9"};
    return names;
}

}  // namespace dt
