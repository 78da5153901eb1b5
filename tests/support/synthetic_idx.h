// SPDX-License-Identifier: MIT
// A tiny synthetic MNIST-format data set for end-to-end tests, and a runner for the `detrain`
// executable (DT_DETRAIN_EXE). The data: 28x28 uint8 images, label of image i = (7i + 3) mod 10,
// class k shows a bright horizontal band at rows 2+2k, 3+2k over deterministic LCG noise in
// [0, 64), so a small CNN learns it in a few steps. Files are uncompressed IDX with the names of
// Fashion-MNIST/MNIST (train-*, t10k-*), so `--data-dir DIR` finds them. Also the per-suite
// scratch root holding them.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace dt::test {

constexpr int kIdxSide = 28, kIdxClasses = 10;

inline void put_be32(std::ofstream& f, uint32_t v) {
    const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
    f.write(b, 4);
}

/// Writes <prefix>-images-idx3-ubyte and <prefix>-labels-idx1-ubyte (n images) into `dir`.
inline void write_idx_split(const std::filesystem::path& dir, const std::string& prefix, int n,
                            uint32_t noise_seed) {
    std::ofstream img(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
    std::ofstream lab(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
    put_be32(img, 0x00000803);
    put_be32(img, static_cast<uint32_t>(n));
    put_be32(img, kIdxSide);
    put_be32(img, kIdxSide);
    put_be32(lab, 0x00000801);
    put_be32(lab, static_cast<uint32_t>(n));
    uint32_t state = noise_seed;
    for (int i = 0; i < n; ++i) {
        const int label = (i * 7 + 3) % kIdxClasses;
        lab.put(static_cast<char>(label));
        for (int y = 0; y < kIdxSide; ++y) {
            for (int x = 0; x < kIdxSide; ++x) {
                state = state * 1664525u + 1013904223u;  // LCG noise in [0, 64)
                int v = static_cast<int>(state >> 26);
                if (y == 2 + 2 * label || y == 3 + 2 * label) v += 180;
                img.put(static_cast<char>(v));
            }
        }
    }
}

/// The train split (noise seed 1) and the test split (noise seed 2) in `dir` (created).
inline void write_synthetic_idx(const std::filesystem::path& dir, int n_train, int n_test) {
    std::filesystem::create_directories(dir);
    write_idx_split(dir, "train", n_train, 1);
    write_idx_split(dir, "t10k", n_test, 2);
}

/// <tmp>/<name>-<pid> with the synthetic set in its data/ folder: the scratch root an end-to-end
/// suite creates in SetUpTestSuite (the pid keeps parallel runs of the binary apart).
inline std::filesystem::path make_synthetic_root(const std::string& name, int n_train, int n_test) {
    const std::filesystem::path root =
        std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
    write_synthetic_idx(root / "data", n_train, n_test);
    return root;
}

/// Removes such a root in TearDownTestSuite; best effort, a leftover folder fails no test.
inline void remove_synthetic_root(const std::filesystem::path& root) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

struct CliRun {
    int status = -1;  // exit status (-1: killed by a signal)
    std::string out, err;
};

/// Runs `<exe> <args>` through the shell, stdout and stderr captured via files named
/// <scratch>/stdout<tag>, <scratch>/stderr<tag>.
inline CliRun run_cli(const std::string& exe, const std::string& args,
                      const std::filesystem::path& scratch, const std::string& tag) {
    const std::filesystem::path out = scratch / ("stdout" + tag), err = scratch / ("stderr" + tag);
    const std::string cmd = exe + " " + args + " >" + out.string() + " 2>" + err.string();
    const int raw = std::system(cmd.c_str());
    CliRun r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

}  // namespace dt::test
