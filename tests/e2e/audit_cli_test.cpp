// SPDX-License-Identifier: MIT
// End to end, `detrain audit` and `detrain train --trace` (issue 22, docs/audit.md) on the
// synthetic IDX data: identical runs report no difference; a planted difference (one site
// switched to permuted or kahan) is named exactly, at its op, tensor and step, with element
// statistics; exact accumulation with shuffled rows differs only in per-sample tensors and ends
// with the same weights; two trace files are compared the same way; the guarantee matrix agrees
// with docs/noise.md; bad input fails clearly. GPT: a planted embed.grad order is named at step 0,
// and the matrix and --error cover its sites.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/detrain_suite.h"
#include "tests/support/synthetic_text.h"

namespace {

namespace fs = std::filesystem;
using dt::test::CliRun;
using json = nlohmann::json;

class AuditCli : public dt::test::DetrainSuite<AuditCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-audit", 128, 32};

 protected:
    static std::string data() {
        return " --data-dir " + (root_ / "data").string() + " --batch-size 32 --threads 2";
    }
    /// `detrain audit --json` of run A's flags against --vs.
    static json audit(const std::string& a, const std::string& vs, int steps = 2) {
        const CliRun r = detrain("audit --json --steps " + std::to_string(steps) + data() + " " +
                                 a + " --vs \"" + vs + "\"");
        EXPECT_EQ(r.status, 0) << r.err;
        return json::parse(r.out);
    }
};

TEST_F(AuditCli, IdenticalRunsReportNoDifference) {
    const json j = audit("--model smallcnn-bn", "--threads 1");
    EXPECT_TRUE(j.at("identical").get<bool>());
    EXPECT_TRUE(j.at("first_difference").is_null());
    EXPECT_EQ(j.at("final_weights").at("differing_tensors"), 0);
    EXPECT_GT(j.at("entries").at("a").get<int>(), 50);  // every op, gradient and weight
}

TEST_F(AuditCli, JsonOutWritesTheObjectBesideTheTable) {
    const fs::path file = root_ / "audit-out.json";
    const CliRun r = detrain("audit --steps 1 --json-out " + file.string() + data() +
                             " --model smallcnn --vs \"--threads 1\"");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find('{'), std::string::npos) << "the table, not JSON, on stdout: " << r.out;
    std::ifstream in(file);
    const json j = json::parse(in);
    EXPECT_TRUE(j.at("first_difference").is_null());
    EXPECT_TRUE(j.at("identical").get<bool>());
}

TEST_F(AuditCli, APermutedWeightGradientIsNamedFirst) {
    // The backward reaches the last convolution first: its weight gradient is where B departs.
    const json j = audit("--model smallcnn --impl exact", "--impl-site conv.wgrad=permuted:3");
    const json& f = j.at("first_difference");
    ASSERT_FALSE(f.is_null());
    EXPECT_EQ(f.at("step"), 0);
    EXPECT_EQ(f.at("phase"), "backward");
    EXPECT_EQ(f.at("op"), "conv2d");
    EXPECT_EQ(f.at("tensor"), "grad conv3.weight");
    EXPECT_FALSE(f.at("structural").get<bool>());
    EXPECT_GT(f.at("differing_elements").get<int64_t>(), 0);
    EXPECT_LE(f.at("differing_elements").get<int64_t>(), f.at("elements").get<int64_t>());
    EXPECT_GE(f.at("max_ulp").get<double>(), 1.0);
    // It spreads: the next step's forward differs everywhere from the first conv on.
    ASSERT_GE(j.at("spread").size(), 2u);
    EXPECT_GT(j.at("spread")[1].at("differing_entries").get<int>(),
              j.at("spread")[0].at("differing_entries").get<int>());
    EXPECT_GT(j.at("final_weights").at("differing_tensors").get<int>(), 0);
}

TEST_F(AuditCli, AnotherOrderAtTheBiasGradientIsNamedFirst) {
    // kahan instead of tree at bias.grad: the first bias gradient of the backward (the last
    // linear layer's).
    const json j = audit("--model smallcnn", "--impl-site bias.grad=kahan");
    const json& f = j.at("first_difference");
    ASSERT_FALSE(f.is_null());
    EXPECT_EQ(f.at("op"), "linear");
    EXPECT_EQ(f.at("tensor"), "grad fc2.bias");
}

TEST_F(AuditCli, ExactSumsWithShuffledRowsDifferOnlyPerSample) {
    const json j = audit("--model smallcnn --impl exact", "--shuffle-within-batch 3");
    const json& f = j.at("first_difference");
    ASSERT_FALSE(f.is_null());
    EXPECT_EQ(f.at("op"), "batch");                               // the rows moved
    EXPECT_EQ(j.at("final_weights").at("differing_tensors"), 0);  // the weights did not
}

TEST_F(AuditCli, ABatchSizeChangeIsReportedAsDifferentWork) {
    const json j = audit("--model smallcnn", "--batch-size 16", 1);
    ASSERT_FALSE(j.at("first_difference").is_null());
    EXPECT_TRUE(j.at("first_difference").at("structural").get<bool>());
}

TEST_F(AuditCli, TraceFilesOfTwoRunsCompareLikeAnAudit) {
    const std::string common = "train --model smallcnn --epochs 1 --progress none" + data();
    const std::string a = (root_ / "a.trace").string(), b = (root_ / "b.trace").string(),
                      c = (root_ / "c.trace").string();
    ASSERT_EQ(detrain(common + " --out " + (root_ / "ta").string() + " --trace " + a).status, 0);
    ASSERT_EQ(
        detrain(common + " --threads 1 --out " + (root_ / "tb").string() + " --trace " + b).status,
        0);
    ASSERT_EQ(detrain(common + " --impl-site linear.wgrad=permuted:5 --out " +
                      (root_ / "tc").string() + " --trace " + c)
                  .status,
              0);
    const std::string text = dt::test::slurp(a);
    const json header = json::parse(text.substr(0, text.find('\n')));
    EXPECT_EQ(header.at("detrain_trace"), 1);
    EXPECT_EQ(header.at("config").at("model"), "smallcnn");
    CliRun same = detrain("audit --json --traces " + a + " " + b);
    ASSERT_EQ(same.status, 0) << same.err;
    EXPECT_TRUE(json::parse(same.out).at("first_difference").is_null());
    CliRun differ = detrain("audit --traces " + a + " " + c);
    ASSERT_EQ(differ.status, 0) << differ.err;
    EXPECT_NE(differ.out.find("first difference  step 0"), std::string::npos) << differ.out;
    EXPECT_NE(differ.out.find("linear grad fc2.weight"), std::string::npos) << differ.out;
}

TEST_F(AuditCli, TheMatrixAgreesWithTheDocumentedGuarantees) {
    const CliRun r = detrain("audit --matrix --json --steps 1 --model smallcnn" + data());
    ASSERT_EQ(r.status, 0) << r.err;
    const json m = json::parse(r.out);
    auto cell = [&](const std::string& site, const std::string& mode, const std::string& change) {
        for (const json& row : m.at("rows"))
            if (row.at("site") == site && row.at("mode") == mode)
                return row.at("changes").at(change).at("stable").get<bool>();
        ADD_FAILURE() << "no row " << site << " " << mode;
        return false;
    };
    std::size_t rows = 0;
    for (const json& row : m.at("rows")) {
        ++rows;
        const std::string mode = row.at("mode"), site = row.at("site");
        for (const auto& [change, c] : row.at("changes").items()) {
            EXPECT_GT(c.at("compared").get<int>(), 0) << site << " " << mode << " " << change;
            // exact: stable under every change; tree, kahan, permuted: under every change but
            // a new order of the samples; evaluation: batch invariant.
            if (mode == "exact" || site == "evaluation" ||
                (mode != "atomic" && change != "permuted rows")) {
                EXPECT_TRUE(c.at("stable").get<bool>()) << site << " " << mode << " " << change;
            }
        }
    }
    EXPECT_EQ(rows, 7u * 5u + 1u);  // smallcnn has no batch norm
    // A new order of the samples moves the tree's bits at the cross-sample sites, not within
    // a sample.
    EXPECT_FALSE(cell("conv.wgrad", "tree", "permuted rows"));
    EXPECT_TRUE(cell("conv.dgrad", "tree", "permuted rows"));
}

TEST_F(AuditCli, RoundingErrorPerSiteAndModeAgainstExact) {
    const CliRun r = detrain("audit --error --json --steps 1 --model smallcnn" + data());
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("reference"), "exact");
    const json& sites = j.at("sites");
    for (const char* site : {"conv.wgrad", "conv.dgrad", "linear.wgrad", "linear.dgrad",
                             "bias.grad", "pool.backward", "loss"}) {
        ASSERT_TRUE(sites.contains(site)) << site;
        for (const char* mode : {"tree", "kahan", "atomic", "permuted"})
            EXPECT_GT(sites.at(site).at(mode).at("elements").get<int64_t>(), 0) << site << mode;
    }
    // Sums of many leaves round away from the exact sum under the plain float orders ...
    EXPECT_GT(sites.at("conv.wgrad").at("tree").at("differing_elements").get<int64_t>(), 0);
    EXPECT_GT(sites.at("conv.wgrad").at("tree").at("max_ulp").get<double>(), 0.0);
    // ... while non-overlapping 2x2 pooling windows have one term per input cell: no rounding.
    for (const char* mode : {"tree", "kahan", "atomic", "permuted"})
        EXPECT_EQ(sites.at("pool.backward").at(mode).at("differing_elements"), 0) << mode;
}

/// A one-block GPT on a synthetic text: " --model gpt ..." (its data flag included).
std::string gpt_flags(const fs::path& root) {
    const fs::path text = root / "text.txt";
    if (!fs::exists(text)) dt::test::write_synthetic_text(text.string(), 8000, 2);
    return " --model gpt --data-file " + text.string() +
           " --layers 1 --heads 2 --width 16 --context 16 --limit-train 32 --limit-test 8 "
           "--batch-size 16 --eval-batch-size 8 --threads 2";
}

TEST_F(AuditCli, APlantedEmbeddingOrderIsNamedAtTheFirstStep) {
    const CliRun r = detrain("audit --json --steps 2" + gpt_flags(root_) +
                             " --impl exact --vs \"--impl-site embed.grad=permuted:1\"");
    ASSERT_EQ(r.status, 0) << r.err;
    const json f = json::parse(r.out).at("first_difference");
    ASSERT_FALSE(f.is_null());
    EXPECT_EQ(f.at("step"), 0);
    EXPECT_EQ(f.at("phase"), "backward");
    EXPECT_EQ(f.at("op"), "embedding");
    const std::string tensor = f.at("tensor");
    EXPECT_TRUE(tensor == "grad wte.weight" || tensor == "grad wpe.weight") << tensor;
    EXPECT_FALSE(f.at("structural").get<bool>());
}

TEST_F(AuditCli, TheGptMatrixAndErrorCoverItsSites) {
    const std::string flags = gpt_flags(root_) + " --clip-grad-norm 1";
    CliRun r = detrain("audit --matrix --json --steps 1" + flags);
    ASSERT_EQ(r.status, 0) << r.err;
    const json m = json::parse(r.out);
    std::set<std::string> sites;
    for (const json& row : m.at("rows")) {
        const std::string site = row.at("site"), mode = row.at("mode");
        sites.insert(site);
        for (const auto& [change, c] : row.at("changes").items()) {
            EXPECT_GT(c.at("compared").get<int>(), 0) << site << " " << mode << " " << change;
            if (mode == "exact" || site == "evaluation" ||
                (mode != "atomic" && change != "permuted rows")) {
                EXPECT_TRUE(c.at("stable").get<bool>()) << site << " " << mode << " " << change;
            }
        }
    }
    r = detrain("audit --error --json --steps 1" + flags);
    ASSERT_EQ(r.status, 0) << r.err;
    const json e = json::parse(r.out).at("sites");
    for (const char* site :
         {"embed.grad", "ln.stats", "ln.grad", "attn.fwd", "attn.grad", "grad.norm"}) {
        EXPECT_TRUE(sites.count(site)) << site << " has no row in the matrix";
        ASSERT_TRUE(e.contains(site)) << site << " is not in audit --error";
        EXPECT_GT(e.at(site).at("tree").at("elements").get<int64_t>(), 0) << site;
        EXPECT_EQ(e.at(site).at("kahan").at("elements"), e.at(site).at("tree").at("elements"));
    }
    // Attention's sums of many float terms round away from the exact sums under tree.
    EXPECT_GT(e.at("attn.fwd").at("tree").at("differing_elements").get<int64_t>(), 0);
}

TEST_F(AuditCli, BadInputFailsWithTheReason) {
    CliRun r = detrain("audit" + data());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("give --vs"), std::string::npos) << r.err;
    const std::string bad = (root_ / "bad.trace").string();
    { std::ofstream(bad) << "{\"detrain_trace\": 1}\n{\"step\": 0}\n"; }
    r = detrain("audit --traces " + bad + " " + bad);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("bad.trace:2: not a detrain trace line"), std::string::npos) << r.err;
    r = detrain("audit --out x" + data() + " --vs \"--threads 1\"");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--out is not an audit flag"), std::string::npos) << r.err;
}

}  // namespace
