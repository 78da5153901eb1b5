// SPDX-License-Identifier: MIT
// Text corpus: small plain and gzip files in a fresh temporary folder (the split, the windows,
// the entropy of known texts), one test per fault asserting the exception type and that the
// message names the file and the fault; plus The Devil's Dictionary when dict-devil is installed.
#include "datasets/text_corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "datasets/sampler.h"
#include "engine/core/error.h"
#include "tests/support/data_files.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

using test::has, test::message_of, test::TempDir, test::write_file;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// n bytes of lower-case letters: "abc...zabc..."
std::vector<uint8_t> letters(std::size_t n) {
    std::vector<uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>('a' + i % 26);
    return v;
}

template <typename E>
std::string load_error(const std::string& path, int64_t context, double fraction = 0.1) {
    return message_of<E>([&] { load_text_corpus(path, context, fraction); });
}

// ---- reading and the split ----

TEST(TextCorpus, ReadsPlainAndGzipIdentically) {
    TempDir dir;
    const auto text = letters(1000);
    write_file(dir / "plain.txt", text, false);
    write_file(dir / "packed.txt", text, true);  // gzip without a .gz name: found by its magic
    write_file(dir / "plain.gz", text, false);   // a .gz name on plain text: read as it is
    for (const std::string& f : {dir / "plain.txt", dir / "packed.txt", dir / "plain.gz"}) {
        TextCorpus c = load_text_corpus(f, 8);
        std::vector<uint8_t> all = c.train;
        all.insert(all.end(), c.validation.begin(), c.validation.end());
        EXPECT_EQ(all, text) << f;
    }
    EXPECT_EQ(load_text_corpus(dir / "packed.txt", 8).name, "packed.txt");
}

TEST(TextCorpus, ValidationIsTheLastRoundedFraction) {
    TempDir dir;
    // 10% of 1005 is 100.5: rounded half away from zero, 101 bytes; of 1004, 100.4 -> 100.
    for (auto [n, v] : {std::pair{1000, 100}, {1004, 100}, {1005, 101}, {1006, 101}}) {
        const auto text = letters(static_cast<std::size_t>(n));
        write_file(dir / "t.txt", text, false);
        TextCorpus c = load_text_corpus(dir / "t.txt", 4);
        ASSERT_EQ(c.validation.size(), static_cast<std::size_t>(v)) << n;
        ASSERT_EQ(c.train.size(), static_cast<std::size_t>(n - v)) << n;
        EXPECT_TRUE(std::equal(c.train.begin(), c.train.end(), text.begin()));
        EXPECT_TRUE(std::equal(c.validation.begin(), c.validation.end(), text.end() - v));
    }
    write_file(dir / "t.txt", letters(1000), false);
    EXPECT_EQ(load_text_corpus(dir / "t.txt", 4, 0.25).validation.size(), 250u);
}

TEST(TextCorpus, AcceptsUtf8AndAFewStrayBytes) {
    TempDir dir;
    // Two-, three- and four-byte sequences: "é", "€", "😀" between letters.
    std::string text;
    for (int i = 0; i < 50; ++i) text += "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 ";
    write_file(dir / "utf8.txt", bytes_of(text), false);
    EXPECT_NO_THROW(load_text_corpus(dir / "utf8.txt", 16));
    // One Latin-1 byte in 1000 (0.1%, under the 1% limit) is a stray byte, not a binary file.
    auto latin1 = letters(1000);
    latin1[500] = 0xE9;
    write_file(dir / "latin1.txt", latin1, false);
    EXPECT_NO_THROW(load_text_corpus(dir / "latin1.txt", 16));
}

// ---- windows ----

TEST(TextCorpus, WindowCountsAtTheBoundaries) {
    // (bytes - 1) / context windows once a split holds context + 1 bytes.
    EXPECT_EQ(corpus_windows(0, 4), 0);
    EXPECT_EQ(corpus_windows(4, 4), 0);  // context bytes: no target for the last token
    EXPECT_EQ(corpus_windows(5, 4), 1);
    EXPECT_EQ(corpus_windows(8, 4), 1);
    EXPECT_EQ(corpus_windows(9, 4), 2);
    EXPECT_EQ(corpus_windows(12, 4), 2);
    EXPECT_EQ(corpus_windows(13, 4), 3);
    EXPECT_EQ(corpus_windows(1, 1), 0);
    EXPECT_EQ(corpus_windows(2, 1), 1);
    EXPECT_EQ(corpus_windows(7, 1), 6);
    EXPECT_TRUE(has(message_of<ValueError>([] { corpus_windows(10, 0); }), "context 0"));
    EXPECT_TRUE(has(message_of<ValueError>([] { corpus_windows(-1, 4); }), "bytes -1"));
}

TEST(TextCorpus, WindowTargetsAreTokensShiftedByOne) {
    const std::vector<uint8_t> split = bytes_of("0123456789abc");  // 13 bytes: 3 windows of 4
    std::vector<int32_t> tokens(4), targets(4);
    const char* want_tokens[] = {"0123", "4567", "89ab"};
    for (int64_t i = 0; i < 3; ++i) {
        corpus_window(split, i, 4, tokens.data(), targets.data());
        for (int t = 0; t < 4; ++t) {
            EXPECT_EQ(tokens[t], want_tokens[i][t]) << "window " << i << ", t " << t;
            EXPECT_EQ(targets[t], split[static_cast<std::size_t>(i * 4 + t + 1)]);
        }
    }
    EXPECT_EQ(targets[3], 'c');  // the last byte is the last target
    // Bytes >= 0x80 come out as 128..255, not as negative chars.
    const std::vector<uint8_t> high = {0xC3, 0xA9, 0xFF};
    corpus_window(high, 1, 1, tokens.data(), targets.data());
    EXPECT_EQ(tokens[0], 0xA9);
    EXPECT_EQ(targets[0], 0xFF);
    auto outside = [&](int64_t i) {
        return message_of<ValueError>(
            [&] { corpus_window(split, i, 4, tokens.data(), targets.data()); });
    };
    EXPECT_TRUE(has(outside(3), "window 3 is out of range: a split of 13 bytes holds 3 windows"));
    EXPECT_TRUE(has(outside(-1), "window -1"));
}

TEST(TextCorpus, WindowsAreTheSamplerSamples) {
    // An epoch's batches draw windows by epoch_permutation over the window count, as BatchLoader
    // draws images: every window once per epoch, the same order for the same (seed, epoch).
    const int64_t n = corpus_windows(1000, 16);
    ASSERT_EQ(n, 62);
    std::vector<int64_t> order = epoch_permutation(n, 7, 3);
    EXPECT_EQ(order, epoch_permutation(n, 7, 3));
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, identity_permutation(n));
}

// ---- entropy ----

TEST(TextCorpus, EntropyOfKnownTexts) {
    EXPECT_EQ(unigram_entropy_bits({}), 0.0);
    EXPECT_EQ(unigram_entropy_bits(bytes_of("aaaa")), 0.0);
    EXPECT_EQ(unigram_entropy_bits(bytes_of("abab")), 1.0);
    EXPECT_EQ(unigram_entropy_bits(bytes_of("abcd")), 2.0);
    EXPECT_EQ(unigram_entropy_bits(bytes_of("dcbaabcd")), 2.0);  // order does not matter
    // "aab": -(2/3 log2 2/3 + 1/3 log2 1/3) = log2 3 - 2/3.
    EXPECT_NEAR(unigram_entropy_bits(bytes_of("aab")), std::log2(3.0) - 2.0 / 3.0, 1e-15);
    std::vector<uint8_t> all(256);
    for (int b = 0; b < 256; ++b) all[static_cast<std::size_t>(b)] = static_cast<uint8_t>(b);
    EXPECT_EQ(unigram_entropy_bits(all), 8.0);
}

TEST(TextCorpus, EntropyIsOfTheTrainingSplit) {
    TempDir dir;
    // 90 bytes "ab" repeated, then 10 bytes "cdefghijkl": training holds a and b only (1 bit).
    std::string text;
    for (int i = 0; i < 45; ++i) text += "ab";
    text += "cdefghijkl";
    write_file(dir / "t.txt", bytes_of(text), false);
    TextCorpus c = load_text_corpus(dir / "t.txt", 4);
    ASSERT_EQ(c.validation, bytes_of("cdefghijkl"));
    EXPECT_EQ(c.train_entropy_bits, 1.0);
}

// ---- errors: each names the file ----

TEST(TextCorpus, MissingFileNamesTheFileAndTheFix) {
    TempDir dir;
    const std::string f = dir / "nothere.txt";
    const std::string msg = load_error<IoError>(f, 8);
    EXPECT_TRUE(has(msg, f + ": file not found"));
    EXPECT_TRUE(has(msg, "scripts/setup.sh installs dict-devil"));
    EXPECT_TRUE(has(msg, "--data-file"));
    EXPECT_TRUE(has(load_error<IoError>(dir.path.string(), 8), "is a folder"));
}

TEST(TextCorpus, EmptyFileIsRejected) {
    TempDir dir;
    write_file(dir / "empty.txt", {}, false);
    write_file(dir / "empty.gz", {}, true);  // a valid gzip stream of nothing
    EXPECT_TRUE(has(load_error<IoError>(dir / "empty.txt", 8), dir / "empty.txt" + ": empty file"));
    EXPECT_TRUE(has(load_error<IoError>(dir / "empty.gz", 8), dir / "empty.gz" + ": empty file"));
}

TEST(TextCorpus, BinaryFileIsRejected) {
    TempDir dir;
    auto nul = letters(1000);
    nul[123] = 0;
    write_file(dir / "nul.bin", nul, true);  // the check runs on the decompressed bytes
    EXPECT_TRUE(has(load_error<IoError>(dir / "nul.bin", 8),
                    dir / "nul.bin" + ": not a text file: a NUL byte at offset 123"));
    // 15 invalid bytes in 1000 (1.5%): over the 1% limit. A lone continuation byte, a truncated
    // sequence, an overlong form, a surrogate, a code point above U+10FFFF, C0/F5..FF.
    auto bad = letters(1000);
    const std::vector<std::vector<uint8_t>> faults = {{0x80},
                                                      {0xC3},
                                                      {0xC0, 0xAF},
                                                      {0xE0, 0x80, 0xAF},
                                                      {0xED, 0xA0, 0x80},
                                                      {0xF4, 0x90, 0x80, 0x80},
                                                      {0xFF}};
    std::size_t at = 100;
    for (const auto& f : faults) {
        std::copy(f.begin(), f.end(), bad.begin() + static_cast<std::ptrdiff_t>(at));
        at += 50;
    }
    // Bytes counted: 0x80 1, C3 1, C0 AF 2, E0 80 AF 3, ED A0 80 3, F4 90 80 80 4, FF 1 = 15.
    write_file(dir / "bad.txt", bad, false);
    const std::string msg = load_error<IoError>(dir / "bad.txt", 8);
    EXPECT_TRUE(has(msg, dir / "bad.txt" + ": not UTF-8 text: 15 of 1000 bytes"));
    EXPECT_TRUE(has(msg, "the first at offset 100"));
    // 10 of 1000 (exactly 1%) is still text.
    auto edge = letters(1000);
    for (std::size_t i = 0; i < 10; ++i) edge[i * 90] = 0xFF;
    write_file(dir / "edge.txt", edge, false);
    EXPECT_NO_THROW(load_text_corpus(dir / "edge.txt", 8));
    edge[995] = 0xFF;
    write_file(dir / "edge.txt", edge, false);
    EXPECT_TRUE(has(load_error<IoError>(dir / "edge.txt", 8), "11 of 1000 bytes"));
}

TEST(TextCorpus, TooShortSaysHowManyBytesAreNeeded) {
    TempDir dir;
    // Context 8 needs 9 bytes per split: validation llround(0.1 n) >= 9 first holds at n = 85.
    write_file(dir / "short.txt", letters(84), false);
    const std::string msg = load_error<IoError>(dir / "short.txt", 8);
    EXPECT_TRUE(has(msg, dir / "short.txt" + ": too short for context 8"));
    EXPECT_TRUE(has(msg, "84 bytes split into 76 training and 8 validation bytes"));
    EXPECT_TRUE(has(msg, "each split needs 9"));
    EXPECT_TRUE(has(msg, "at least 85 bytes"));
    write_file(dir / "short.txt", letters(85), false);
    TextCorpus c = load_text_corpus(dir / "short.txt", 8);
    EXPECT_EQ(corpus_windows(static_cast<int64_t>(c.validation.size()), 8), 1);
    // At fraction 0.9 the training split is the short one: 85 bytes give 8 training and 77
    // validation bytes; 86 give 9 and 77.
    EXPECT_TRUE(has(load_error<IoError>(dir / "short.txt", 8, 0.9), "at least 86 bytes"));
    write_file(dir / "short.txt", letters(1000), false);
    EXPECT_TRUE(has(load_error<IoError>(dir / "short.txt", 100), "at least 1005 bytes"));
}

TEST(TextCorpus, UnreadableGzipIsRejected) {
    TempDir dir;
    const std::string full = dir / "full.gz";
    write_file(full, letters(5000), true);
    std::ifstream in(full, std::ios::binary);
    std::vector<char> packed{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    ASSERT_GT(packed.size(), 40u);
    // Cut in the middle of the stream.
    std::ofstream(dir / "cut.gz", std::ios::binary).write(packed.data(), 20);
    EXPECT_TRUE(
        has(load_error<IoError>(dir / "cut.gz", 8), dir / "cut.gz" + ": unreadable gzip stream"));
    // The magic, then garbage.
    write_file(dir / "junk.gz", {0x1f, 0x8b, 0x08, 0x00, 'j', 'u', 'n', 'k', 0xFF, 0x13, 0x37},
               false);
    EXPECT_TRUE(
        has(load_error<IoError>(dir / "junk.gz", 8), dir / "junk.gz" + ": unreadable gzip stream"));
}

TEST(TextCorpus, BadArgumentsAreValueErrors) {
    TempDir dir;
    write_file(dir / "t.txt", letters(1000), false);
    EXPECT_TRUE(has(load_error<ValueError>(dir / "t.txt", 0), "context 0 is out of range"));
    EXPECT_TRUE(has(load_error<ValueError>(dir / "t.txt", 8, 0.0), "validation fraction 0 is"));
    EXPECT_TRUE(has(load_error<ValueError>(dir / "t.txt", 8, 1.0), "validation fraction 1 is"));
    // Arguments are checked before the file: a bad context on a missing file is a ValueError.
    EXPECT_TRUE(has(load_error<ValueError>(dir / "nothere", -3), "context -3"));
}

// ---- the default corpus ----

TEST(TextCorpus, DevilsDictionary) {
    const std::string path = default_corpus_path();
    if (!std::filesystem::exists(path)) {
        GTEST_SKIP() << path << " is absent: scripts/setup.sh installs it (Debian dict-devil)";
    }
    TextCorpus c = load_text_corpus(path, 256);
    EXPECT_EQ(c.name, "devil.dict.dz");
    EXPECT_EQ(c.train.size() + c.validation.size(), 383656u);
    EXPECT_EQ(c.validation.size(), 38366u);  // llround(38365.6)
    EXPECT_NEAR(c.train_entropy_bits, 4.4637, 1e-4);
    const std::string head(c.train.begin(), c.train.begin() + 26);
    EXPECT_EQ(head, "00-database-dictfmt-1.13.0");
    EXPECT_EQ(corpus_windows(static_cast<int64_t>(c.train.size()), 256), 1348);
    EXPECT_EQ(corpus_windows(static_cast<int64_t>(c.validation.size()), 256), 149);
}

}  // namespace
}  // namespace dt
