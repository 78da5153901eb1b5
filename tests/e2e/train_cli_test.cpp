// SPDX-License-Identifier: MIT
// End to end: runs the real `detrain` executable (DT_DETRAIN_EXE) on a tiny synthetic IDX data
// set (tests/support/synthetic_idx.h) written to a temporary directory: 512 train / 128 test.
// Checks the files of a run, reproducibility of weights_sha256 (same seeds, other thread count;
// a different --seed-init changes it) and that bad input fails with a message naming the problem
// and no result.json. The noise switches have their own suite (noise_cli_test.cpp). Budget: ~30 s
// on 2 cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/io/safetensors.h"
#include "engine/io/sha256.h"
#include "engine/runtime/cuda_device.h"
#include "tests/support/detrain_suite.h"

namespace {

namespace fs = std::filesystem;

using dt::test::CliRun;
using dt::test::slurp;

constexpr int kTrain = 512, kTest = 128;

class TrainCli : public dt::test::DetrainSuite<TrainCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-e2e", kTrain, kTest};

 protected:
    /// `detrain train` on the synthetic data into root/<name>; returns the run.
    static CliRun train(const std::string& name, const std::string& extra) {
        return detrain(train_into(name) +
                       " --epochs 2 --batch-size 32 --lr 2e-3 --eval-batch-size 50"
                       " --progress none " +
                       extra);
    }

    static std::string hash_of(const std::string& name) {
        return result(name).at("weights_sha256").get<std::string>();
    }

    /// The base run, trained once and shared by several tests.
    static const CliRun& base() {
        static const CliRun run = train("base", "--threads 2 --progress plain");
        return run;
    }

    // The reference small run ("small-a"), trained once per process: ctest runs every test in
    // a process of its own, so no test may rely on another one having run.
    static const CliRun& small_ref() {
        static const CliRun run = train("small-a", std::string(kSmall) + "--threads 2");
        return run;
    }
    static constexpr const char* kSmall = "--epochs 1 --limit-train 192 ";
};

TEST_F(TrainCli, HelpAndInfo) {
    const CliRun help = detrain("--help");
    EXPECT_EQ(help.status, 0);
    EXPECT_NE(help.out.find("deterministic"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("train"), std::string::npos);
    EXPECT_NE(help.out.find("info"), std::string::npos);
    const CliRun train_help = detrain("train --help");
    EXPECT_EQ(train_help.status, 0);
    EXPECT_NE(train_help.out.find("--seed-init"), std::string::npos);
    // --help says what --isa selects: every CPU kernel with paths; info lists the vector loops.
    EXPECT_NE(train_help.out.find("GEMM and convolution kernels"), std::string::npos);
    EXPECT_NE(train_help.out.find("exact row"), std::string::npos);
    const CliRun info = detrain("info");
    EXPECT_EQ(info.status, 0);
    EXPECT_NE(info.out.find("this CPU runs: scalar"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("block_sums"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("fashion-mnist"), std::string::npos) << info.out;
    // DT_ISA names the path in force at start-up.
    const CliRun scalar = dt::test::run_cli(std::string("env DT_ISA=scalar ") + DT_DETRAIN_EXE,
                                            "info", root_, "isa-env");
    EXPECT_NE(scalar.out.find("in force scalar"), std::string::npos) << scalar.out;
    // --json: the same facts as one object.
    const CliRun json = detrain("info --json");
    EXPECT_EQ(json.status, 0);
    const nlohmann::json j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["cuda"]["built"], dt::cuda_device::built());
    EXPECT_EQ(j["cuda"]["available"], dt::cuda_device::available());
    EXPECT_EQ(j["cuda"]["device"], dt::cuda_device::describe());
    if (dt::cuda_device::built()) {  // the kernels' ways in force, each set by its variable
        // What the kernels were compiled for (CMake's list), in the JSON and the text.
        const std::string archs = dt::cuda_device::build_architectures();
        EXPECT_FALSE(archs.empty());
        EXPECT_EQ(j["cuda"]["architectures"], archs) << json.out;
        EXPECT_NE(info.out.find("compiled in (--device cuda), CUDA architectures " + archs + "\n"),
                  std::string::npos)
            << info.out;
        EXPECT_EQ(j["cuda"]["kernel_ways"]["channel_leaves"], "staged") << json.out;
        EXPECT_EQ(j["cuda"]["kernel_ways"]["tile"], "auto") << json.out;
        EXPECT_EQ(j["cuda"]["kernel_ways"]["poison"], false) << json.out;
        const CliRun rows = dt::test::run_cli(
            std::string("env DT_CUDA_CHANNEL_LEAVES=rows DT_CUDA_TILE=large DT_CUDA_POISON=1 ") +
                DT_DETRAIN_EXE,
            "info", root_, "ways-env");
        EXPECT_NE(rows.out.find("tiles large ($DT_CUDA_TILE)"), std::string::npos) << rows.out;
        EXPECT_NE(rows.out.find("channel leaves rows"), std::string::npos) << rows.out;
        EXPECT_NE(rows.out.find("undefined memory poisoned"), std::string::npos) << rows.out;
        const CliRun tiny = dt::test::run_cli(
            std::string("env DT_CUDA_TILE=tiny ") + DT_DETRAIN_EXE, "info", root_, "ways-tiny");
        EXPECT_NE(tiny.out.find("tiles tiny ($DT_CUDA_TILE)"), std::string::npos) << tiny.out;
    } else {
        EXPECT_TRUE(j["cuda"]["architectures"].is_null());
        EXPECT_TRUE(j["cuda"]["kernel_ways"].is_null());
    }
    EXPECT_EQ(j["cpu_isa"]["supported"][0], "scalar");
    EXPECT_GE(j["openmp"]["logical_cores"].get<int>(), 1);
    EXPECT_TRUE(j["data"]["fashion-mnist"]["found"].is_boolean());
    EXPECT_NE(info.out.find(j["data"]["fashion-mnist"]["dir"].get<std::string>()),
              std::string::npos);
    EXPECT_NE(info.out.find("detrain " + j["version"].get<std::string>()), std::string::npos);
}

TEST_F(TrainCli, ParseErrorsExitTwo) {
    const CliRun r = detrain("train --no-such-flag");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
    EXPECT_EQ(detrain("").status, 2);  // a subcommand is required
}

TEST_F(TrainCli, RunWritesResultPredictionsAndWeights) {
    const CliRun& r = base();
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("detrain train"), std::string::npos) << r.err;  // configuration block
    EXPECT_NE(r.err.find("\n  device     cpu\n"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("epoch 2/2"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("test accuracy"), std::string::npos) << r.out;

    const nlohmann::json j = result("base");
    const std::string hash = j.at("weights_sha256");
    EXPECT_EQ(hash.size(), 64u);
    EXPECT_NE(r.out.find(hash), std::string::npos);
    EXPECT_EQ(j.at("detrain_version"), "0.1.0");
    EXPECT_EQ(j.at("config").at("model"), "smallcnn");
    EXPECT_EQ(j.at("threads"), 2);
    EXPECT_EQ(j.at("dataset").at("train_size"), kTrain);
    EXPECT_EQ(j.at("dataset").at("test_size"), kTest);
    EXPECT_EQ(j.at("dataset").at("class_names").size(), 10u);
    ASSERT_EQ(j.at("history").size(), 2u);
    for (const auto& e : j.at("history")) {
        EXPECT_GT(e.at("train_loss").get<double>(), 0.0);
        EXPECT_GT(e.at("images_per_second").get<double>(), 0.0);
    }
    EXPECT_LT(j.at("history")[1].at("train_loss").get<double>(),
              j.at("history")[0].at("train_loss").get<double>());
    const double acc = j.at("test_accuracy");
    std::printf("base run: test accuracy %.3f, final train loss %.4f\n", acc,
                j.at("final_train_loss").get<double>());
    EXPECT_GE(acc, 0.5) << "the bands are easy to learn";  // chance is 0.1
    EXPECT_LE(acc, 1.0);
    EXPECT_EQ(j.at("per_class_accuracy").size(), 10u);
    EXPECT_EQ(j.at("num_parameters"), 23626);
    EXPECT_GT(j.at("wall_time_seconds").get<double>(), 0.0);
    EXPECT_GT(j.at("images_per_second").get<double>(), 0.0);
    // Peak memory: at least the data set in memory (512 + 128 images of 28x28 bytes), and sane.
    EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), (512 + 128) * 784);
    EXPECT_LT(j.at("peak_rss_bytes").get<int64_t>(), int64_t{8} << 30);
    EXPECT_NE(r.out.find("peak memory"), std::string::npos) << r.out;
    EXPECT_EQ(j.at("seeds").at("init"), 0);

    // predictions.csv: header + one row per test example; accuracy agrees with result.json.
    std::istringstream csv(slurp(root_ / "base" / "predictions.csv"));
    std::string line;
    std::getline(csv, line);
    EXPECT_EQ(line, "index,label,predicted");
    int rows = 0, correct = 0;
    while (std::getline(csv, line)) {
        int index = -1, label = -1, pred = -1;
        ASSERT_EQ(std::sscanf(line.c_str(), "%d,%d,%d", &index, &label, &pred), 3) << line;
        EXPECT_EQ(index, rows);
        correct += label == pred;
        ++rows;
    }
    EXPECT_EQ(rows, kTest);
    EXPECT_DOUBLE_EQ(acc, static_cast<double>(correct) / kTest);

    // weights.safetensors: readable, hash in metadata; smallcnn has no buffers, so the hash is
    // over all of its tensors in file order.
    const auto file = dt::io::load_safetensors((root_ / "base" / "weights.safetensors").string());
    EXPECT_EQ(file.metadata.at("weights_sha256"), hash);
    std::vector<dt::Tensor> tensors;
    for (const auto& [name, t] : file.tensors) tensors.push_back(t);
    EXPECT_EQ(dt::io::weights_sha256(tensors), hash);

    // test_logits.safetensors: (test size, classes); the arg-max of each row is the prediction.
    const auto lf = dt::io::load_safetensors((root_ / "base" / "test_logits.safetensors").string());
    const dt::Tensor* logits = lf.find("logits");
    ASSERT_NE(logits, nullptr);
    ASSERT_EQ(logits->shape(), (dt::Shape{kTest, 10}));
    std::istringstream csv2(slurp(root_ / "base" / "predictions.csv"));
    std::getline(csv2, line);
    for (int i = 0; i < kTest; ++i) {
        std::getline(csv2, line);
        int index = -1, label = -1, pred = -1;
        ASSERT_EQ(std::sscanf(line.c_str(), "%d,%d,%d", &index, &label, &pred), 3) << line;
        const float* row = logits->data<float>() + i * 10;
        EXPECT_EQ(std::max_element(row, row + 10) - row, pred) << "test example " << i;
    }
}

TEST_F(TrainCli, ImbalanceKeepsAFractionOfOneClass) {
    const CliRun r = train("imbalanced", std::string(kSmall) + "--imbalance 3:0.25");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = result("imbalanced");
    EXPECT_EQ(j.at("config").at("imbalance"), "3:0.25");
    // kSmall keeps 192 training examples; class 3 has some of them, 1/4 (rounded up) remain.
    const int64_t kept = j.at("dataset").at("train_size").get<int64_t>();
    EXPECT_LT(kept, 192);
    EXPECT_GT(kept, 192 - 192 / 10);
    ASSERT_EQ(small_ref().status, 0);
    EXPECT_NE(hash_of("imbalanced"), hash_of("small-a"));
    for (const char* bad : {"3", "3:0", "3:1.5", "x:0.5", "-1:0.5", "3:0.5x"}) {
        const CliRun b = train("imb-bad", std::string("--imbalance ") + bad);
        EXPECT_NE(b.status, 0) << bad;
        EXPECT_NE(b.err.find("--imbalance"), std::string::npos) << bad << ": " << b.err;
    }
    const CliRun b = train("imb-class", std::string(kSmall) + "--imbalance 12:0.5");
    EXPECT_NE(b.status, 0);
    EXPECT_NE(b.err.find("class 12"), std::string::npos) << b.err;
}

// Hash comparisons use a smaller run (1 epoch, 192 examples = 6 steps) to keep the suite fast;
// the later --epochs overrides the earlier one (last flag wins).
TEST_F(TrainCli, SameSeedsSameHashAtAnyThreadCount) {
    const std::string small = kSmall;
    const CliRun& a = small_ref();
    ASSERT_EQ(a.status, 0) << a.err;
    const CliRun b = train("small-b", small + "--threads 2");
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(hash_of("small-b"), hash_of("small-a"));
    const CliRun one = train("small-one-thread", small + "--threads 1");
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_EQ(hash_of("small-one-thread"), hash_of("small-a"));
    EXPECT_EQ(result("small-one-thread").at("threads"), 1);
}

TEST_F(TrainCli, OtherInitSeedOtherHash) {
    const CliRun r = train("small-init-1", "--epochs 1 --limit-train 192 --seed-init 1");
    ASSERT_EQ(r.status, 0) << r.err;
    const CliRun& a = small_ref();
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_NE(hash_of("small-init-1"), hash_of("small-a"));
    EXPECT_EQ(result("small-init-1").at("seeds").at("init"), 1);
    EXPECT_EQ(result("small-init-1").at("seeds").at("shuffle"), 0);
}

TEST_F(TrainCli, InitFromStartsFromAFilesWeights) {
    const CliRun& a = small_ref();
    ASSERT_EQ(a.status, 0) << a.err;
    const std::string file = (root_ / "small-a" / "weights.safetensors").string();
    // From a file the init seed no longer matters, and the start is not --init's.
    for (const char* seed : {"1", "2"}) {
        const CliRun r = train(std::string("from-a-") + seed, std::string(kSmall) + "--init-from " +
                                                                  file + " --seed-init " + seed);
        ASSERT_EQ(r.status, 0) << r.err;
    }
    EXPECT_EQ(hash_of("from-a-1"), hash_of("from-a-2"));
    EXPECT_NE(hash_of("from-a-1"), hash_of("small-a"));
    EXPECT_EQ(result("from-a-1").at("config").at("init-from"), file);
    // A file of another model, or none: refused before anything is written.
    const CliRun bn =
        train("from-a-bn", std::string(kSmall) + "--model smallcnn-bn --init-from " + file);
    EXPECT_EQ(bn.status, 1);
    EXPECT_NE(bn.err.find("parameter 'bn1.weight'"), std::string::npos) << bn.err;
    EXPECT_FALSE(fs::exists(root_ / "from-a-bn"));
    const CliRun none = train("from-none", std::string(kSmall) + "--init-from nowhere.safetensors");
    EXPECT_EQ(none.status, 1);
    EXPECT_NE(none.err.find("--init-from nowhere.safetensors: no such file"), std::string::npos)
        << none.err;
    EXPECT_FALSE(fs::exists(root_ / "from-none"));
}

TEST_F(TrainCli, BatchNormModelTrains) {
    const CliRun r = train("bn", "--model smallcnn-bn --epochs 1 --limit-train 192");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = result("bn");
    EXPECT_EQ(j.at("dataset").at("train_size"), 192);
    const auto file = dt::io::load_safetensors((root_ / "bn" / "weights.safetensors").string());
    EXPECT_NE(file.find("bn1.running_mean"), nullptr);
    EXPECT_EQ(file.metadata.at("weights_sha256"), j.at("weights_sha256").get<std::string>());
}

struct BadRun {
    const char* name;
    std::string args;
    std::string expect;  // text the error message must contain
};

TEST_F(TrainCli, BadInputFailsWithoutResult) {
    const std::string data = "--data-dir " + (root_ / "data").string();
    const BadRun cases[] = {
        {"bad-model", data + " --model vgg", "--model"},
        {"bad-lr", data + " --lr -1", "--lr"},
        {"bad-batch", data + " --batch-size 0", "--batch-size"},
        {"no-data", "--data-dir " + (root_ / "nowhere").string(), (root_ / "nowhere").string()},
    };
    for (const BadRun& b : cases) {
        SCOPED_TRACE(b.name);
        const fs::path out = root_ / b.name;
        const CliRun r =
            detrain("train " + b.args + " --epochs 1 --progress none --out " + out.string());
        EXPECT_NE(r.status, 0);
        EXPECT_NE(r.err.find(b.expect), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("detrain: error:"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out / "result.json"));
    }
    const CliRun r = detrain("train " + data + " --epochs 1 --progress none --out /proc/x");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("/proc/x"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists("/proc/x/result.json"));
}

TEST_F(TrainCli, CudaWithoutAGpuSaysWhatIsMissingAndWritesNothing) {
    if (dt::cuda_device::available()) GTEST_SKIP() << "this machine has a CUDA device";
    const fs::path out = root_ / "no-gpu";
    const CliRun r = detrain("train --data-dir " + (root_ / "data").string() +
                             " --epochs 1 --progress none --device cuda --out " + out.string());
    EXPECT_EQ(r.status, 1);
    // The build (no CUDA compiled in) or the machine (no driver, no GPU), and the way out.
    EXPECT_NE(r.err.find(dt::cuda_device::built() ? "no usable CUDA device" : "no CUDA backend"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--device cpu"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    const CliRun info = detrain("info");
    EXPECT_EQ(info.status, 0);
    EXPECT_NE(info.out.find("cuda device     none ("), std::string::npos) << info.out;
}

}  // namespace
