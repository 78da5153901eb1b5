// SPDX-License-Identifier: MIT
// End to end, hostile files (issue 6): truncated and corrupt IDX and CIFAR data, a bad text
// corpus (missing, empty, binary, too short: refused before the output folder exists), a checkpoint
// of another model (safetensors with other names and shapes), and a run that diverges with
// checkpoints on. Each must exit 1 with "detrain: error:" and a message naming the file and the
// fault, write no result.json, and leave a previous run's files alone. The flags' bad values
// have their own suites (train_cli_test.cpp, noise_cli_test.cpp), a bad --resume and a full
// disk too (resume_cli_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "apps/train/checkpoint.h"
#include "tests/support/detrain_suite.h"

namespace {

namespace fs = std::filesystem;
using dt::test::CliRun;

class BadDataCli : public dt::test::DetrainSuite<BadDataCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-bad", 96, 32};

 protected:
    /// `detrain train` on DATA into root/<out> for one epoch.
    static CliRun train(const fs::path& data, const std::string& out, const std::string& extra) {
        return detrain("train --data-dir " + data.string() + " --out " + (root_ / out).string() +
                       " --epochs 1 --batch-size 32 --progress none " + extra);
    }
    /// A copy of the synthetic IDX set in root/<name>, with `file` rewritten by `edit`.
    template <class Edit>
    static fs::path broken_idx(const std::string& name, const std::string& file, Edit edit) {
        const fs::path dir = root_ / name;
        fs::create_directories(dir);
        for (const auto& e : fs::directory_iterator(root_ / "data"))
            fs::copy_file(e.path(), dir / e.path().filename(),
                          fs::copy_options::overwrite_existing);
        std::string bytes = dt::test::slurp(dir / file);
        edit(bytes);
        std::ofstream(dir / file, std::ios::binary | std::ios::trunc) << bytes;
        return dir;
    }
    static void expect_failure(const CliRun& r, const std::string& out,
                               const std::vector<std::string>& needles) {
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_NE(r.err.find("detrain: error:"), std::string::npos) << r.err;
        for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(root_ / out / "result.json"));
    }
};

TEST_F(BadDataCli, TruncatedOrCorruptIdxFiles) {
    const std::string images = "train-images-idx3-ubyte", labels = "train-labels-idx1-ubyte";
    fs::path d = broken_idx("idx-short", images, [](std::string& b) { b.resize(b.size() - 100); });
    expect_failure(train(d, "out-short", ""), "out-short", {(d / images).string(), "truncated"});
    d = broken_idx("idx-magic", images, [](std::string& b) { b[3] = 0x09; });
    expect_failure(train(d, "out-magic", ""), "out-magic", {(d / images).string(), "magic"});
    d = broken_idx("idx-label", labels, [](std::string& b) { b[8 + 5] = 42; });
    expect_failure(train(d, "out-label", ""), "out-label", {(d / labels).string(), "42"});
    d = broken_idx("idx-count", labels, [](std::string& b) { b[7] = 1; });  // 1 label, 96 images
    expect_failure(train(d, "out-count", ""), "out-count", {"1"});
}

TEST_F(BadDataCli, AMissingEmptyBinaryOrShortCorpusIsRefusedBeforeAnythingIsWritten) {
    const fs::path dir = root_ / "corpora";
    fs::create_directories(dir);
    std::ofstream(dir / "empty.txt").close();
    std::string binary(4000, '\0');
    for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 37 % 251);
    std::ofstream(dir / "binary.bin", std::ios::binary) << binary;
    std::ofstream(dir / "short.txt") << "A short text of a few words.\n";
    const std::pair<std::string, std::string> cases[] = {{"missing.txt", "not found"},
                                                         {"empty.txt", "empty"},
                                                         {"binary.bin", "text"},
                                                         {"short.txt", "too short"}};
    for (const auto& [file, fault] : cases) {
        SCOPED_TRACE(file);
        const std::string out = "corpus-" + file;
        const CliRun r = detrain("train --model gpt --data-file " + (dir / file).string() +
                                 " --out " + (root_ / out).string() + " --progress none");
        expect_failure(r, out, {(dir / file).string(), fault, "--data-file"});
        EXPECT_FALSE(fs::exists(root_ / out)) << "the run wrote " << out << " before failing";
    }
}

TEST_F(BadDataCli, TruncatedOrCorruptCifarFiles) {
    // CIFAR-10 binary layout: records of 1 label byte + 3072 pixels; 5 train batches + test.
    const fs::path dir = root_ / "cifar";
    fs::create_directories(dir);
    const std::string record(1 + 3072, '\x01');
    auto write = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << bytes;
    };
    for (int b = 1; b <= 5; ++b) write("data_batch_" + std::to_string(b) + ".bin", record + record);
    write("test_batch.bin", record);
    write("data_batch_3.bin", record + record.substr(0, 100));  // truncated
    expect_failure(train(dir, "out-cifar", "--dataset cifar10 --model smallcnn"), "out-cifar",
                   {(dir / "data_batch_3.bin").string(), "not a multiple of the record size"});
    std::string bad = record;
    bad[0] = 10;  // label 10 of 10 classes
    write("data_batch_3.bin", record + bad);
    expect_failure(train(dir, "out-cifar", "--dataset cifar10 --model smallcnn"), "out-cifar",
                   {(dir / "data_batch_3.bin").string(), "label 10 in record 1 is out of range"});
}

TEST_F(BadDataCli, ACheckpointOfAnotherModelIsRefused) {
    const std::string out = (root_ / "ck").string();
    ASSERT_EQ(train(root_ / "data", "ck", "--checkpoint-every 3").status, 0);
    // Forced onto another model, the checkpoint's tensors have other names and shapes.
    const CliRun r =
        train(root_ / "data", "ck", "--model smallcnn-bn --resume " + out + " --force");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find(dt::checkpoint_path(out)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bn1"), std::string::npos) << r.err;  // the missing parameter
}

TEST_F(BadDataCli, DivergenceStopsWithTheLastGoodCheckpointKept) {
    const std::string out = (root_ / "nan").string();
    const CliRun r =
        train(root_ / "data", "nan", "--optimizer sgd --momentum 0 --lr 1e4 --checkpoint-every 1");
    expect_failure(r, "nan",
                   {"try a smaller --lr", "last good checkpoint", dt::checkpoint_path(out)});
    EXPECT_NO_THROW(dt::read_checkpoint(out));
}

}  // namespace
