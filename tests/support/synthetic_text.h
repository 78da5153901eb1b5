// SPDX-License-Identifier: MIT
// A synthetic English-like corpus for the language-model tests: words of a fixed list drawn by a
// 64-bit xorshift keyed by the seed (integer arithmetic only: the same bytes on every machine),
// with spaces, commas, full stops and a newline every few sentences. Its bytes are 7-bit ASCII,
// so it passes the corpus's text check, and it has structure a model can learn.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dt::test {

/// `bytes` bytes of synthetic text keyed by `seed`.
inline std::vector<uint8_t> synthetic_text(int64_t bytes, uint64_t seed) {
    static const char* const kWords[] = {
        "the",   "devil", "is",    "a",      "word",    "of",    "wit",    "and",   "to",
        "that",  "which", "man",   "his",    "with",    "not",   "by",     "one",   "who",
        "noun",  "verb",  "great", "little", "reason",  "truth", "friend", "money", "time",
        "world", "dog",   "cat",   "heart",  "history", "law",   "good",   "evil",  "wise"};
    constexpr uint64_t kCount = sizeof(kWords) / sizeof(kWords[0]);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    auto next = [&x] {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        return x;
    };
    std::string s;
    int words = 0, sentences = 0;
    while (static_cast<int64_t>(s.size()) < bytes) {
        std::string w = kWords[next() % kCount];
        if (words == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
        s += w;
        ++words;
        if (words > 3 && next() % 5 == 0) {
            s += ".";
            words = 0;
            s += ++sentences % 4 == 0 ? "\n" : " ";
        } else {
            s += next() % 9 == 0 ? ", " : " ";
        }
    }
    s.resize(static_cast<std::size_t>(bytes));
    return std::vector<uint8_t>(s.begin(), s.end());
}

/// Writes synthetic_text(bytes, seed) to `path` and returns the path.
inline std::string write_synthetic_text(const std::string& path, int64_t bytes, uint64_t seed) {
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    if (!folder.empty()) std::filesystem::create_directories(folder);
    const std::vector<uint8_t> text = synthetic_text(bytes, seed);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(text.data()),
               static_cast<std::streamsize>(text.size()));
    return path;
}

}  // namespace dt::test
