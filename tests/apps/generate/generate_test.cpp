// SPDX-License-Identifier: MIT
// `detrain generate` end to end on a small GPT run of the synthetic text: the same seed prints
// the same continuation, another seed another; --json gives a log-probability per byte; a run of
// another model, a missing run and bad values are refused. In process, on the stand-in cuda
// device (tests/support/fake_cuda.h): the KV cache's steps give the cpu's bytes and log-probs.
#include "models/generate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/noise/reduce_sites.h"
#include "tests/support/detrain_suite.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/models.h"
#include "tests/support/synthetic_text.h"

namespace {

namespace fs = std::filesystem;
using dt::test::CliRun;
using json = nlohmann::json;

class GenerateCli : public dt::test::DetrainSuite<GenerateCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-generate", 64, 16};

 protected:
    /// A trained 2-block GPT in root/gpt (once).
    static std::string gpt_run() {
        const fs::path out = root_ / "gpt";
        if (fs::exists(out / "result.json")) return out.string();
        const std::string text =
            dt::test::write_synthetic_text((root_ / "t.txt").string(), 9000, 3);
        const CliRun r =
            detrain("train --model gpt --data-file " + text + " --out " + out.string() +
                    " --layers 2 --heads 2 --width 16 --context 32 --limit-train 64 "
                    "--epochs 1 --batch-size 16 --progress none --impl exact");
        EXPECT_EQ(r.status, 0) << r.err;
        return out.string();
    }
    static json generate_json(const std::string& flags) {
        const CliRun r = detrain("generate --from " + gpt_run() + " --json " + flags);
        EXPECT_EQ(r.status, 0) << r.err;
        return r.status == 0 ? json::parse(r.out) : json();
    }
};

TEST_F(GenerateCli, TheSeedDecidesTheTextAndEveryByteHasALogProb) {
    const json a = generate_json("--prompt 'The ' --tokens 50 --seed 4");
    const json b = generate_json("--prompt 'The ' --tokens 50 --seed 4");
    const json c = generate_json("--prompt 'The ' --tokens 50 --seed 5");
    ASSERT_TRUE(a.is_object());
    EXPECT_EQ(a.at("tokens"), b.at("tokens"));
    EXPECT_EQ(a.at("log_probs"), b.at("log_probs"));
    EXPECT_NE(a.at("tokens"), c.at("tokens"));
    EXPECT_EQ(a.at("tokens").size(), 50u);
    EXPECT_EQ(a.at("log_probs").size(), 50u);
    EXPECT_EQ(a.at("weights_sha256"), result("gpt").at("weights_sha256"));
    // Past the context of 32: the cache restarts, the text goes on.
    EXPECT_GE(a.at("context_restarts").get<int>(), 1);
    // Plain output: the prompt, then the continuation.
    const CliRun plain = detrain("generate --from " + gpt_run() + " --prompt 'The ' --tokens 5");
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.out.rfind("The ", 0), 0u) << plain.out;
}

TEST_F(GenerateCli, WhatIsNotAGptRunIsRefused) {
    CliRun r = detrain("train --data-dir " + (root_ / "data").string() + " --out " +
                       (root_ / "cnn").string() + " --epochs 1 --batch-size 32 --progress none");
    ASSERT_EQ(r.status, 0) << r.err;
    r = detrain("generate --from " + (root_ / "cnn").string() + " --prompt x");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("needs a gpt run"), std::string::npos) << r.err;
    r = detrain("generate --from " + (root_ / "nothing").string() + " --prompt x");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("result.json"), std::string::npos) << r.err;
    r = detrain("generate --from " + gpt_run() + " --prompt x --temperature -1");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("temperature"), std::string::npos) << r.err;
    r = detrain("generate --from " + gpt_run() + " --prompt ''");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--prompt"), std::string::npos) << r.err;
}

TEST(GenerateDevice, TheCachesStepsOnTheDeviceGiveTheCpusBytes) {
    using namespace dt;
    const std::unique_ptr<GPT> model = test::gpt_model(2, 2, 16, 40, 4);
    GPT& m = *model;
    const std::vector<int64_t> prompt = {'A', ' ', 'w'};
    for (auto mode : {kernels::common::AccumMode::kTree, kernels::common::AccumMode::kExact}) {
        const ScopedReduceConfig config(kernels::common::accum_spec(mode));
        const Generation cpu = generate(m, prompt, {45, 0.9, 7});
        const test::ScopedFakeCuda device;
        m.to(Device::kCuda);
        const Generation dev = generate(m, prompt, {45, 0.9, 7});
        m.to(Device::kCpu);
        EXPECT_EQ(dev.tokens, cpu.tokens);
        EXPECT_EQ(dev.log_probs, cpu.log_probs);
        EXPECT_GE(dev.restarts, 1);
    }
}

}  // namespace
