// SPDX-License-Identifier: MIT
// End to end, the noise switchboard (issue 3, docs/noise.md) through the real `detrain`
// executable on the synthetic IDX data of tests/support/synthetic_idx.h: control runs agree,
// a `random` run replays exactly from its result.json, every source can be switched off and is
// recorded, --init-perturb moves the weights, --shuffle-within-batch is accepted, bad values fail
// with clear messages. Runs are small (1 epoch, 192 examples = 6 steps of 32). Budget: < 30 s.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/detrain_suite.h"

namespace {

namespace fs = std::filesystem;
using dt::test::CliRun;

class NoiseCli : public dt::test::DetrainSuite<NoiseCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-noise-e2e", 256, 64};

 protected:
    /// A small `detrain train` into root/<name> (6 steps), `extra` appended (later flags win).
    static CliRun train(const std::string& name, const std::string& extra) {
        return detrain(train_into(name) +
                       " --epochs 1 --limit-train 192 --batch-size 32 --lr 2e-3"
                       " --eval-batch-size 64 --threads 2 --progress none " +
                       extra);
    }

    /// Trains and returns result.json (fails the test when the run fails).
    static nlohmann::json run_ok(const std::string& name, const std::string& extra) {
        const CliRun r = train(name, extra);
        EXPECT_EQ(r.status, 0) << extra << "\n" << r.err;
        if (r.status != 0) return nlohmann::json::object();
        return result(name);
    }

    static std::string hash(const nlohmann::json& j) {
        return j.value("weights_sha256", std::string("(no result)"));
    }

    /// The default run (control), shared by tests of one process.
    static const nlohmann::json& control() {
        static const nlohmann::json j = run_ok("control", "");
        return j;
    }
};

TEST_F(NoiseCli, ControlRunsAreIdentical) {
    const nlohmann::json a = run_ok("control-a", "--noise control");
    const nlohmann::json b = run_ok("control-b", "--noise control --threads 1");
    EXPECT_EQ(hash(a), hash(b));
    EXPECT_EQ(hash(a), hash(control()));  // control = the defaults
    const nlohmann::json& n = a.at("noise");
    EXPECT_EQ(n.at("preset"), "control");
    for (const char* s : {"init", "shuffle", "augment", "dropout"}) {
        EXPECT_EQ(n.at("sources").at(s).at("kind"), "fixed") << s;
        EXPECT_EQ(n.at("sources").at(s).at("seed"), 0) << s;
    }
    EXPECT_EQ(n.at("impl"), "deterministic");
    for (const auto& [site, v] : n.at("sites").items()) EXPECT_EQ(v.at("mode"), "tree") << site;
    EXPECT_EQ(n.at("shuffle_within_batch").at("kind"), "off");
    EXPECT_EQ(n.at("init_perturb"), nullptr);
    EXPECT_EQ(n.at("threads"), 2);
}

TEST_F(NoiseCli, RandomSeedsAreRecordedAndReplayExactly) {
    const CliRun r = train("random", "--seed random --progress plain");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = result("random");
    const nlohmann::json& init = j.at("noise").at("sources").at("init");
    EXPECT_EQ(init.at("kind"), "random");
    const uint64_t seed = init.at("seed").get<uint64_t>();
    EXPECT_NE(r.err.find("random:" + std::to_string(seed)), std::string::npos) << r.err;  // banner
    EXPECT_EQ(j.at("seeds").at("init").get<uint64_t>(), seed);

    // Replay (default --out: <dir>-replay), and once more at another thread count.
    const std::string file = (root_ / "random" / "result.json").string();
    const CliRun replay = detrain("train --replay " + file + " --progress none");
    ASSERT_EQ(replay.status, 0) << replay.err;
    EXPECT_NE(replay.out.find("replay          matches"), std::string::npos) << replay.out;
    const nlohmann::json k = result("random-replay");
    EXPECT_EQ(hash(k), hash(j));
    EXPECT_EQ(k.at("noise"), j.at("noise"));
    EXPECT_EQ(k.at("replay_of").at("matches"), true);
    const CliRun one = detrain("train --replay " + file + " --threads 1 --progress none --out " +
                               (root_ / "random-replay-1").string());
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_NE(one.out.find(hash(j)), std::string::npos) << one.out;

    // Another random run draws other seeds, hence other weights.
    const nlohmann::json other = run_ok("random-2", "--seed random");
    EXPECT_NE(other.at("noise").at("sources").at("init").at("seed").get<uint64_t>(), seed);
    EXPECT_NE(hash(other), hash(j));

    // A replay re-runs the record as it is: other flags are refused, naming them.
    const CliRun refused = detrain("train --replay " + file + " --lr 0.1 --epochs 3");
    EXPECT_EQ(refused.status, 1);
    for (const char* part : {"--lr", "--epochs", "cannot be combined with --replay", "--out"}) {
        EXPECT_NE(refused.err.find(part), std::string::npos) << part << " in " << refused.err;
    }
}

TEST_F(NoiseCli, SourcesSwitchOffAndAreRecorded) {
    // off = the source does nothing: the same weights as not asking for it at all.
    const nlohmann::json shuffle_off = run_ok("shuffle-off", "--seed-shuffle off");
    const nlohmann::json no_shuffle = run_ok("no-shuffle", "--no-shuffle");
    EXPECT_EQ(hash(shuffle_off), hash(no_shuffle));
    EXPECT_NE(hash(shuffle_off), hash(control()));
    EXPECT_EQ(shuffle_off.at("noise").at("sources").at("shuffle").at("kind"), "off");
    EXPECT_EQ(shuffle_off.at("config").at("shuffle"), false);
    EXPECT_EQ(shuffle_off.at("seeds").at("shuffle"), "off");

    const nlohmann::json augment_off =
        run_ok("augment-off", "--augment crop+flip --seed-augment off");
    const nlohmann::json augmented = run_ok("augmented", "--augment crop+flip");
    EXPECT_EQ(hash(augment_off), hash(control()));
    EXPECT_NE(hash(augmented), hash(control()));
    EXPECT_EQ(augment_off.at("noise").at("sources").at("augment").at("kind"), "off");

    const nlohmann::json dropout_off = run_ok("dropout-off", "--dropout 0.5 --seed-dropout off");
    const nlohmann::json dropped = run_ok("dropped", "--dropout 0.5");
    EXPECT_EQ(hash(dropout_off), hash(control()));
    EXPECT_NE(hash(dropped), hash(control()));
    EXPECT_EQ(dropout_off.at("noise").at("sources").at("dropout").at("kind"), "off");
    EXPECT_EQ(dropout_off.at("config").at("seed-dropout"), "off");
}

TEST_F(NoiseCli, InitPerturbMovesTheWeights) {
    const CliRun r = train("perturb-a", "--init-perturb conv1.weight:0:up --progress plain");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("perturbed       conv1.weight[0]"), std::string::npos) << r.err;
    const nlohmann::json a = result("perturb-a");
    const nlohmann::json down = run_ok("perturb-down", "--init-perturb conv1.weight:0:down");
    const nlohmann::json other = run_ok("perturb-b", "--init-perturb fc2.weight:7");
    EXPECT_NE(hash(a), hash(control()));  // one bit of one initial weight changes the run
    EXPECT_NE(hash(down), hash(a));
    EXPECT_NE(hash(other), hash(a));
    EXPECT_NE(hash(other), hash(control()));
    const nlohmann::json& p = a.at("noise").at("init_perturb");
    EXPECT_EQ(p.at("param"), "conv1.weight");
    EXPECT_EQ(p.at("index"), 0);
    EXPECT_EQ(p.at("direction"), "up");
    std::printf(
        "one-bit init change: control %.16s..., conv1.weight[0] up %.16s..., down "
        "%.16s..., fc2.weight[7] up %.16s...\n",
        hash(control()).c_str(), hash(a).c_str(), hash(down).c_str(), hash(other).c_str());
}

TEST_F(NoiseCli, ShuffleWithinBatchUnderTree) {
    const nlohmann::json a = run_ok("swb-a", "--shuffle-within-batch 3");
    const nlohmann::json b = run_ok("swb-b", "--shuffle-within-batch fixed:3");
    EXPECT_EQ(hash(a), hash(b));  // seeded: replayable
    EXPECT_EQ(a.at("noise").at("shuffle_within_batch").at("seed"), 3);
    // Under tree, the in-batch order is part of the summation order: the weights may differ
    // (exact mode removes that: tests/determinism/guarantees_test.cpp). Reported only.
    std::printf("tree, --shuffle-within-batch 3: weights %s the unshuffled run's\n",
                hash(a) == hash(control()) ? "EQUAL" : "differ from");
}

TEST_F(NoiseCli, BadValuesFailClearly) {
    struct Bad {
        const char* name;
        std::string args;
        std::string expect;
        int status;
    };
    const Bad cases[] = {
        {"bad-seed", "--seed -3", "--seed: got '-3'", 2},
        {"bad-init-off", "--seed-init off", "cannot be switched off", 2},
        {"bad-noise", "--noise chaos", "control, algo, impl, algo+impl", 2},
        {"bad-impl", "--impl quick", "--impl: got 'quick'", 2},
        {"bad-site", "--impl-site conv.wgard=atomic", "conv.wgrad, conv.dgrad", 2},
        {"bad-mode", "--impl-site loss=fastest", "permuted:<seed>", 2},
        {"bad-perturb-name", "--init-perturb conv9.weight:0", "conv1.weight, conv1.bias", 1},
        {"bad-perturb-index", "--init-perturb conv1.bias:16", "[0, 16)", 1},
        {"bad-swb", "--shuffle-within-batch sometimes", "--shuffle-within-batch", 2},
        {"bad-replay", "--replay " + (root_ / "none.json").string(), "none.json", 1},
    };
    for (const Bad& b : cases) {
        SCOPED_TRACE(b.name);
        const CliRun r = train(b.name, b.args);
        EXPECT_EQ(r.status, b.status) << r.err;
        EXPECT_NE(r.err.find(b.expect), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("detrain: error:"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(root_ / b.name / "result.json"));
    }
}

TEST_F(NoiseCli, DivergenceNamesStepOpAndTensor) {
    const CliRun r = train("diverge", "--optimizer sgd --momentum 0 --lr 1e30");
    EXPECT_EQ(r.status, 1);
    for (const char* part : {"step 2", "softmax_cross_entropy", "loss", "--lr"}) {
        EXPECT_NE(r.err.find(part), std::string::npos) << part << " in " << r.err;
    }
    EXPECT_FALSE(fs::exists(root_ / "diverge" / "result.json"));
}

// ---- presets and replay of the implementation settings (the guarantees themselves, per mode,
// are in tests/determinism/guarantees_test.cpp) ----

TEST_F(NoiseCli, PresetsAreRecorded) {
    const nlohmann::json impl = run_ok("preset-impl", "--noise impl");
    EXPECT_EQ(impl.at("noise").at("impl"), "fast");
    EXPECT_EQ(impl.at("noise").at("sites").at("conv.wgrad").at("mode"), "atomic");
    EXPECT_EQ(impl.at("noise").at("sources").at("init").at("kind"), "fixed");
    const nlohmann::json both = run_ok("preset-algo-impl", "--noise algo+impl");
    EXPECT_EQ(both.at("noise").at("sources").at("dropout").at("kind"), "random");
    EXPECT_EQ(both.at("noise").at("sites").at("loss").at("mode"), "atomic");
}

TEST_F(NoiseCli, RandomPermutedSeedReplays) {
    const nlohmann::json r = run_ok("perm-random", "--impl-site conv.wgrad=permuted:random");
    const CliRun replay = detrain(
        "train --replay " + (root_ / "perm-random" / "result.json").string() + " --progress none");
    EXPECT_NE(replay.out.find(hash(r)), std::string::npos) << replay.out;
}

}  // namespace
