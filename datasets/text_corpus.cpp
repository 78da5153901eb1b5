// SPDX-License-Identifier: MIT
// Text corpus: arguments -> file bytes (plain, or gzip through zlib's gz* reader) -> empty, text
// and length checks -> split -> entropy of the training bytes. Windows are cut on demand.
#include "datasets/text_corpus.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/core/error.h"

namespace dt {

namespace {

constexpr int64_t kMaxContext = int64_t{1} << 30;
constexpr const char* kMissingHint =
    "hint: scripts/setup.sh installs dict-devil, the default corpus, or pass --data-file FILE";
constexpr const char* kTextHint = "hint: pass a UTF-8 text file with --data-file FILE";

// The whole decompressed content of a gzip file; an unreadable stream throws IoError.
std::vector<uint8_t> read_gzip(const std::string& path) {
    gzFile file = gzopen(path.c_str(), "rb");
    DT_CHECK_IO(file != nullptr, path, ": cannot open for reading (hint: check its permissions)");
    std::vector<uint8_t> out;
    std::array<unsigned char, 1 << 16> buf;
    int got = 0;
    while ((got = gzread(file, buf.data(), static_cast<unsigned>(buf.size()))) > 0) {
        out.insert(out.end(), buf.begin(), buf.begin() + got);
    }
    int code = Z_OK;
    const char* msg = gzerror(file, &code);
    std::string what = msg != nullptr ? msg : "";
    if (what.rfind(path + ": ", 0) == 0) what.erase(0, path.size() + 2);  // zlib names the file
    gzclose(file);
    DT_CHECK_IO(got == 0 && code == Z_OK, path, ": unreadable gzip stream after ", out.size(),
                " bytes: ", what, " (hint: a truncated or corrupt file; fetch it again)");
    return out;
}

// The file's bytes, decompressed when it starts with the gzip magic 1f 8b.
std::vector<uint8_t> read_text_bytes(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    DT_CHECK_IO(fs::exists(path, ec), path, ": file not found (", kMissingHint, ")");
    DT_CHECK_IO(!fs::is_directory(path, ec), path, ": is a folder, not a text file (", kTextHint,
                ")");
    std::ifstream in(path, std::ios::binary);
    DT_CHECK_IO(in.good(), path, ": cannot open for reading (hint: check its permissions)");
    std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in),
                               std::istreambuf_iterator<char>()};
    DT_CHECK_IO(!in.bad(), path, ": read error after ", bytes.size(), " bytes");
    if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return read_gzip(path);
    return bytes;
}

// Length of the valid UTF-8 sequence at b[i], or 0 when the byte there starts none
// (RFC 3629 table: no overlong forms, no surrogates D800..DFFF, nothing above U+10FFFF).
int utf8_sequence_length(const std::vector<uint8_t>& b, std::size_t i) {
    const uint8_t c = b[i];
    if (c < 0x80) return 1;
    int len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
        if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;  // overlong below U+10000
        if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
        return 0;  // a continuation byte, C0, C1 or F5..FF
    }
    if (i + static_cast<std::size_t>(len) > b.size()) return 0;
    if (b[i + 1] < lo || b[i + 1] > hi) return 0;
    for (int k = 2; k < len; ++k) {
        if (b[i + static_cast<std::size_t>(k)] < 0x80 || b[i + static_cast<std::size_t>(k)] > 0xBF)
            return 0;
    }
    return len;
}

// Throws IoError unless `bytes` are text: no NUL, at most kTextMaxInvalidUtf8Fraction of the
// bytes outside valid UTF-8 sequences (each such byte counts once, the scan resumes after it).
void check_text(const std::string& path, const std::vector<uint8_t>& bytes) {
    const auto nul = std::find(bytes.begin(), bytes.end(), uint8_t{0});
    DT_CHECK_IO(nul == bytes.end(), path, ": not a text file: a NUL byte at offset ",
                nul - bytes.begin(), " (", kTextHint, ")");
    int64_t invalid = 0, first = -1;
    for (std::size_t i = 0; i < bytes.size();) {
        const int len = utf8_sequence_length(bytes, i);
        if (len == 0) {
            if (first < 0) first = static_cast<int64_t>(i);
            ++invalid;
            ++i;
        } else {
            i += static_cast<std::size_t>(len);
        }
    }
    const double n = static_cast<double>(bytes.size());
    DT_CHECK_IO(static_cast<double>(invalid) <= kTextMaxInvalidUtf8Fraction * n, path,
                ": not UTF-8 text: ", invalid, " of ", bytes.size(),
                " bytes are outside valid UTF-8 sequences, the first at offset ", first,
                " (at most ", kTextMaxInvalidUtf8Fraction * 100,
                "% may be; hint: a binary file? convert a text with iconv -t UTF-8)");
}

int64_t validation_bytes(int64_t n, double fraction) {
    return std::llround(fraction * static_cast<double>(n));
}

// The smallest file size whose two splits each hold one window (both sizes grow with n).
int64_t bytes_needed(int64_t context, double fraction) {
    auto ok = [&](int64_t n) {
        const int64_t v = validation_bytes(n, fraction);
        return v >= context + 1 && n - v >= context + 1;
    };
    int64_t lo = 0, hi = int64_t{1} << 62;  // ok(hi) for any context <= 2^30, fraction >= 2^-30
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (ok(mid) ? hi : lo) = mid;
    }
    return hi;
}

}  // namespace

std::string default_corpus_path() { return "/usr/share/dictd/devil.dict.dz"; }

TextCorpus load_text_corpus(const std::string& path, int64_t context, double validation_fraction) {
    DT_CHECK_VALUE(context >= 1 && context <= kMaxContext, "text corpus: context ", context,
                   " is out of range (expected 1 to ", kMaxContext, " bytes)");
    DT_CHECK_VALUE(validation_fraction > 0 && validation_fraction < 1,
                   "text corpus: validation fraction ", validation_fraction,
                   " is out of range (expected a number between 0 and 1, e.g. 0.1)");
    std::vector<uint8_t> bytes = read_text_bytes(path);
    DT_CHECK_IO(!bytes.empty(), path, ": empty file, no text to train on (", kTextHint, ")");
    check_text(path, bytes);
    const int64_t n = static_cast<int64_t>(bytes.size());
    const int64_t v = validation_bytes(n, validation_fraction);
    DT_CHECK_IO(v >= context + 1 && n - v >= context + 1, path, ": too short for context ", context,
                ": its ", n, " bytes split into ", n - v, " training and ", v,
                " validation bytes, and each split needs ", context + 1,
                " bytes for one window, so the file needs at least ",
                bytes_needed(context, validation_fraction), " bytes at validation fraction ",
                validation_fraction, " (hint: a smaller --context, or a longer text)");
    TextCorpus c;
    c.name = std::filesystem::path(path).filename().string();
    c.validation.assign(bytes.end() - v, bytes.end());
    bytes.resize(static_cast<std::size_t>(n - v));
    c.train = std::move(bytes);
    c.train_entropy_bits = unigram_entropy_bits(c.train);
    return c;
}

int64_t corpus_windows(int64_t bytes, int64_t context) {
    DT_CHECK_VALUE(context >= 1 && bytes >= 0, "corpus_windows: bytes ", bytes, ", context ",
                   context, " (expected bytes >= 0, context >= 1)");
    return bytes >= context + 1 ? (bytes - 1) / context : 0;
}

void corpus_window(const std::vector<uint8_t>& split, int64_t index, int64_t context,
                   int32_t* tokens, int32_t* targets) {
    const int64_t windows = corpus_windows(static_cast<int64_t>(split.size()), context);
    DT_CHECK_VALUE(index >= 0 && index < windows, "corpus_window: window ", index,
                   " is out of range: a split of ", split.size(), " bytes holds ", windows,
                   " windows at context ", context);
    const uint8_t* w = split.data() + index * context;
    for (int64_t t = 0; t < context; ++t) {
        tokens[t] = w[t];
        targets[t] = w[t + 1];
    }
}

namespace {

Dataset windows_of(const std::vector<uint8_t>& split, const std::string& name, int64_t context) {
    Dataset d;
    d.name = name;
    d.size = corpus_windows(static_cast<int64_t>(split.size()), context);
    DT_CHECK_VALUE(d.size > 0, name, ": ", split.size(), " bytes hold no window of context ",
                   context, " (hint: a smaller --context)");
    d.channels = 1, d.height = 1;
    d.width = static_cast<int>(context + 1);
    d.num_classes = kTextVocabSize;
    d.context = context;
    d.pixels.resize(static_cast<std::size_t>(d.size * (context + 1)));
    for (int64_t i = 0; i < d.size; ++i) {
        const auto* w = split.data() + i * context;
        std::copy(w, w + context + 1,
                  d.pixels.begin() + static_cast<std::ptrdiff_t>(i * (context + 1)));
    }
    d.labels.assign(static_cast<std::size_t>(d.size), 0);
    return d;
}

}  // namespace

DatasetSplits text_dataset(const TextCorpus& corpus, int64_t context) {
    DT_CHECK_VALUE(context >= 1 && context < (int64_t{1} << 30), "text_dataset: context ", context,
                   " is out of range (expected 1 to 2^30 - 1 bytes)");
    return {windows_of(corpus.train, corpus.name + "/train", context),
            windows_of(corpus.validation, corpus.name + "/validation", context)};
}

double unigram_entropy_bits(const std::vector<uint8_t>& bytes) {
    std::array<int64_t, kTextVocabSize> count{};
    for (uint8_t b : bytes) ++count[b];
    const double n = static_cast<double>(bytes.size());
    double h = 0;
    for (int64_t k : count) {  // ORDER: byte values 0..255, in double
        if (k == 0) continue;
        const double p = static_cast<double>(k) / n;
        h -= p * std::log2(p);
    }
    return h;
}

}  // namespace dt
