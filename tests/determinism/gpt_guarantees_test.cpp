// SPDX-License-Identifier: MIT
// The switchboard's guarantees for GPT (models/gpt.h), end to end through the real `detrain`
// executable on a synthetic text (tests/support/synthetic_text.h), a 2-block model, 4 steps:
//   - tree, kahan and exact give the same weights at 1, 2 and 3 threads;
//   - every instruction set this CPU has gives the same weights (deterministic and exact);
//   - exact: permuting the sequences inside every batch leaves the weights bit-identical (tree's
//     change: the permutation happens);
//   - exact: micro-batches give the whole batch's weights (layer norm is per token: no caveat);
//     tree's differ (each part is rounded).
// A bad corpus is refused before anything is written: tests/e2e/bad_data_cli_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runtime/isa.h"
#include "tests/support/detrain_suite.h"
#include "tests/support/synthetic_text.h"

namespace fs = std::filesystem;

namespace {

class GptGuarantees : public dt::test::DetrainSuite<GptGuarantees> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-gpt-guarantees", 8, 8};

 protected:
    /// Trains the small GPT (4 steps of 16 windows) with `args` into root/<name> and returns
    /// weights_sha256; fails the test on error.
    static std::string train_hash(const std::string& name, const std::string& args) {
        const fs::path text = root_ / "text.txt";
        if (!fs::exists(text)) dt::test::write_synthetic_text(text.string(), 12000, 8);
        const std::string cmd =
            "train --model gpt --data-file " + text.string() + " --out " + (root_ / name).string() +
            " --layers 2 --heads 2 --width 32 --context 32 --limit-train 64 --limit-test 8 "
            "--epochs 1 --batch-size 16 --eval-batch-size 8 --progress none --seed 3 " +
            args;
        const dt::test::CliRun r = detrain(cmd);
        EXPECT_EQ(r.status, 0) << "detrain " << cmd << "\n" << r.err;
        if (r.status != 0) return "failed:" + name;
        return result(name).at("weights_sha256").get<std::string>();
    }
};

TEST_F(GptGuarantees, ThreadCountChangesNoBitInTreeKahanExact) {
    for (const char* impl : {"deterministic", "kahan", "exact"}) {
        const std::string base = std::string("--impl ") + impl;
        const std::string want = train_hash(std::string(impl) + "-t1", base + " --threads 1");
        for (int t : {2, 3}) {
            EXPECT_EQ(train_hash(std::string(impl) + "-t" + std::to_string(t),
                                 base + " --threads " + std::to_string(t)),
                      want)
                << impl << ", " << t << " threads";
        }
    }
}

TEST_F(GptGuarantees, EveryInstructionSetGivesTheSameWeights) {
    std::vector<std::string> isas;
    for (dt::CpuIsa isa : dt::supported_cpu_isas()) isas.emplace_back(dt::cpu_isa_name(isa));
    for (const char* impl : {"deterministic", "exact"}) {
        const std::string base = std::string("--impl ") + impl + " --threads 2";
        const std::string want =
            train_hash(std::string("isa-scalar-") + impl, base + " --isa scalar");
        for (std::size_t i = 1; i < isas.size(); ++i) {
            EXPECT_EQ(train_hash("isa-" + isas[i] + "-" + impl, base + " --isa " + isas[i]), want)
                << impl << ", " << isas[i] << " vs scalar";
        }
    }
}

TEST_F(GptGuarantees, ExactIsInvariantToSequenceOrderInsideBatches) {
    const std::string exact = train_hash("order-exact", "--impl exact --threads 2");
    EXPECT_EQ(train_hash("order-exact5", "--impl exact --threads 2 --shuffle-within-batch 5"),
              exact);
    EXPECT_EQ(train_hash("order-exact6", "--impl exact --threads 2 --shuffle-within-batch 6"),
              exact);
    EXPECT_NE(train_hash("order-tree5", "--threads 2 --shuffle-within-batch 5"),
              train_hash("order-tree", "--threads 2"));
}

TEST_F(GptGuarantees, ExactMicroBatchesGiveTheWholeBatchBits) {
    const std::string exact = train_hash("mb-exact", "--impl exact --threads 2");
    EXPECT_EQ(train_hash("mb-exact3", "--impl exact --threads 2 --micro-batch 3"), exact);
    EXPECT_EQ(train_hash("mb-exact8", "--impl exact-all --threads 2 --micro-batch 8"),
              train_hash("mb-exact-all", "--impl exact-all --threads 2"));
    EXPECT_NE(train_hash("mb-tree3", "--threads 2 --micro-batch 3"),
              train_hash("mb-tree", "--threads 2"));
}

}  // namespace
