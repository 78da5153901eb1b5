// SPDX-License-Identifier: MIT
// `mpirun -np P detrain train` end to end (issue 21), each test starting mpiexec itself: under
// exact accumulation P = 1..4 processes give the weights (and epoch losses) of the run without
// mpirun, for SmallCNN, SmallCNN-BN (batch-norm statistics synchronised) and GPT, with
// micro-batches too; tree is identical run to run for a fixed P, and gives the single process's
// weights where the run says "tree-invariant" (engine/runtime/allreduce_plan.h); rank 0 alone
// writes; `random` seeds are rank 0's, and a rank started with other flags or a spoiled message
// ends the job; a killed
// rank ends the whole job, and the restart command resumes it at another process count with the
// uninterrupted run's weights.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/support/detrain_suite.h"
#include "tests/support/synthetic_text.h"

namespace {

namespace fs = std::filesystem;
using dt::test::CliRun;

class DataParallel : public dt::test::DetrainSuite<DataParallel> {
 public:
    // 232 training samples in batches of 32: seven full batches and a last one of 8 (>= 4 ranks).
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-dp", 232, 40};

 protected:
    /// `detrain train <flags>` into root/<out>, under mpiexec with P processes (P = 0: without).
    static CliRun train(int P, const std::string& out, const std::string& flags) {
        return detrain(train_args(out) + " " + flags, launcher(P));
    }
    static std::string launcher(int P) { return P == 0 ? std::string() : str_launch(P); }
    /// mpiexec with P processes; as root (CI containers) Open MPI must be told it may run.
    static std::string str_launch(int P) {
        return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
               "OMP_WAIT_POLICY=passive " +
               std::string(DT_MPIEXEC) + " --oversubscribe -np " + std::to_string(P) + " ";
    }
    static std::string train_args(const std::string& out) {
        return train_into(out) +
               " --epochs 2 --batch-size 32 --lr 2e-3 --eval-batch-size 20 --threads 1"
               " --progress none";
    }
    /// The weights hash, the epoch losses (bit for bit: JSON keeps a double's 17 digits) and
    /// accuracies of two runs.
    static void expect_same(const std::string& a, const std::string& b) {
        const nlohmann::json ra = result(a), rb = result(b);
        EXPECT_EQ(ra.at("weights_sha256"), rb.at("weights_sha256")) << a << " vs " << b;
        ASSERT_EQ(ra.at("history").size(), rb.at("history").size());
        for (std::size_t e = 0; e < ra.at("history").size(); ++e) {  // timings aside
            const nlohmann::json &ea = ra.at("history")[e], &eb = rb.at("history")[e];
            EXPECT_EQ(ea.at("train_loss"), eb.at("train_loss")) << a << " vs " << b << ", " << e;
            EXPECT_EQ(ea.at("test_accuracy"), eb.at("test_accuracy")) << a << " vs " << b;
        }
        EXPECT_EQ(ra.at("test_accuracy"), rb.at("test_accuracy"));
    }
    static void expect_ok(const CliRun& r) { ASSERT_EQ(r.status, 0) << r.err; }
};

TEST_F(DataParallel, ExactGivesTheSingleProcessWeightsForOneToFourProcesses) {
    for (const std::string model : {"smallcnn", "smallcnn-bn"}) {
        SCOPED_TRACE(model);
        const std::string flags = "--model " + model +
                                  " --dropout 0.3 --augment crop+flip "
                                  "--shuffle-within-batch 5 --impl exact";
        expect_ok(train(0, model + "-single", flags));
        for (int P = 1; P <= 4; ++P) {
            SCOPED_TRACE("P = " + std::to_string(P));
            const std::string out = model + "-np" + std::to_string(P);
            const CliRun r = train(P, out, flags);
            expect_ok(r);
            expect_same(model + "-single", out);
            EXPECT_EQ(result(out).at("processes"), P);
            // One report: rank 0's.
            std::size_t at = 0, reports = 0;
            while ((at = r.out.find("weights_sha256", at)) != std::string::npos) ++reports, ++at;
            EXPECT_EQ(reports, 1u) << r.out;
        }
    }
}

TEST_F(DataParallel, GptUnderExactGivesTheSingleProcessWeightsForOneToFourProcesses) {
    const fs::path text = root_ / "text.txt";
    dt::test::write_synthetic_text(text.string(), 12000, 6);
    // Later flags win: the GPT's batch and data replace train_args's.
    const std::string flags = "--model gpt --data-file " + text.string() +
                              " --layers 2 --heads 2 --width 32 --context 32 --limit-train 60 "
                              "--limit-test 8 --batch-size 16 --eval-batch-size 8 --lr 1e-3 "
                              "--shuffle-within-batch 5 --impl exact";
    expect_ok(train(0, "gpt-single", flags));
    for (int P = 1; P <= 4; ++P) {
        SCOPED_TRACE("P = " + std::to_string(P));
        const std::string out = "gpt-np" + std::to_string(P);
        expect_ok(train(P, out, flags));
        expect_same("gpt-single", out);
    }
    expect_ok(train(2, "gpt-np2-mb", flags + " --micro-batch 3"));
    expect_same("gpt-single", "gpt-np2-mb");
}

TEST_F(DataParallel, ExactMicroBatchesOnSeveralProcessesGiveTheSameWeights) {
    const std::string flags = "--model smallcnn --impl exact";
    expect_ok(train(0, "mb-single", flags));
    expect_ok(train(3, "mb-np3", flags + " --micro-batch 3"));
    expect_same("mb-single", "mb-np3");
}

TEST_F(DataParallel, TreeIsIdenticalRunToRunForAFixedProcessCount) {
    const std::string flags = "--model smallcnn-bn --impl deterministic";
    expect_ok(train(3, "tree-a", flags));
    expect_ok(train(3, "tree-b", flags));
    expect_same("tree-a", "tree-b");
    // Per-process partials are rounded before they are combined: another P, other bits.
    expect_ok(train(0, "tree-single", flags));
    EXPECT_NE(result("tree-a").at("weights_sha256"), result("tree-single").at("weights_sha256"));
}

TEST_F(DataParallel, TreeGivesTheSingleProcessWeightsWhereItSaysTreeInvariant) {
    // Batches of 128: shares of 128, 64 and 32 samples are whole power-of-two blocks of every
    // site's leaves (SmallCNN's conv.wgrad groups 16 and 32 samples); 128 does not split in 3.
    for (const std::string model : {"smallcnn", "smallcnn-bn"}) {
        SCOPED_TRACE(model);
        const std::string flags =
            "--model " + model + " --impl deterministic --batch-size 128 --limit-train 128";
        expect_ok(train(0, "inv-" + model, flags));
        EXPECT_EQ(result("inv-" + model).at("allreduce"), "tree-invariant");
        for (int P : {1, 2, 4}) {
            SCOPED_TRACE("P = " + std::to_string(P));
            const std::string out = "inv-" + model + "-np" + std::to_string(P);
            expect_ok(train(P, out, flags));
            EXPECT_EQ(result(out).at("allreduce"), "tree-invariant");
            expect_same("inv-" + model, out);
        }
        expect_ok(train(3, "inv-" + model + "-np3", flags));
        const nlohmann::json r3 = result("inv-" + model + "-np3");
        EXPECT_EQ(r3.at("allreduce"), "tree-gather");
        EXPECT_NE(r3.at("allreduce_why").get<std::string>().find("does not split evenly"),
                  std::string::npos);
    }
    // 224 samples: a last batch of 96, shares of 48 samples, three conv.wgrad leaves of 16.
    expect_ok(train(2, "inv-last96",
                    "--model smallcnn --impl deterministic --batch-size 128"
                    " --limit-train 224"));
    const nlohmann::json r = result("inv-last96");
    EXPECT_EQ(r.at("allreduce"), "tree-gather");
    EXPECT_NE(r.at("allreduce_why").get<std::string>().find("48 samples"), std::string::npos);
}

TEST_F(DataParallel, OverlapOnAndOffGiveTheSameBits) {
    // Buckets of 2,000 elements: SmallCNN-BN's gradients travel in several buckets while the
    // backward runs, synced batch norm's totals meanwhile on the world's communicator; GPT's
    // tied table has exact sums of two uses in one bucket.
    const std::string smallcnn = "--model smallcnn-bn --shuffle-within-batch 5";
    const std::string gpt_text = (root_ / "overlap.txt").string();
    dt::test::write_synthetic_text(gpt_text, 12000, 6);
    const std::string gpt = "--model gpt --data-file " + gpt_text +
                            " --layers 2 --heads 2 --width 32 --context 32 --limit-train 60 "
                            "--limit-test 8 --batch-size 16 --eval-batch-size 8 --lr 1e-3";
    struct Case {
        std::string name, flags;
        int P;
    };
    const std::vector<Case> cases = {
        {"det-np2", smallcnn + " --impl deterministic", 2},
        {"det-np3", smallcnn + " --impl deterministic", 3},
        {"exact-np2", smallcnn + " --impl exact", 2},
        {"exact-np3-mb", smallcnn + " --impl exact --micro-batch 4", 3},
        {"gpt-np2", gpt + " --impl exact", 2}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const std::string off = "ovl-off-" + c.name, on = "ovl-on-" + c.name;
        expect_ok(train(c.P, off, c.flags + " --overlap off"));
        expect_ok(train(c.P, on, c.flags + " --overlap on --bucket-elements 2000"));
        expect_same(off, on);
        EXPECT_EQ(result(off).at("gradient_buckets"), 0);
        EXPECT_GT(result(on).at("gradient_buckets").get<int>(), 2);
    }
}

TEST_F(DataParallel, RanksDrawRandomSeedsTogetherAndStopOnOtherFlags) {
    // `random` seeds: rank 0 draws them for every process. (Each drawing its own, the ranks
    // would train on other batches; the agreement check would end the job.)
    expect_ok(train(2, "agree-random", "--model smallcnn --seed random --epochs 1"));
    EXPECT_TRUE(result("agree-random").at("config").at("seed") == "random");
    // Rank 1 started with another --lr (a two-program launch): the job ends naming the flag.
    const std::string a = train_args("agree-lr") + " --model smallcnn --epochs 1";
    const CliRun r =
        detrain(a + " --lr 1e-3 : -np 1 " + std::string(DT_DETRAIN_EXE) + " " + a + " --lr 2e-3",
                str_launch(1));
    EXPECT_NE(r.status, 0);
    EXPECT_NE((r.out + r.err).find("the run differs from rank 0's: flags.lr"), std::string::npos)
        << r.err;
}

TEST_F(DataParallel, ACorruptedOrCutMessageEndsEveryRankBeforeItIsUsed) {
    // DT_TEST_FAULT: rank 1 spoils a block it sends (after its checksum was taken) in its first
    // checked exchange: the gradients' floats (deterministic), the loss's exact total (exact),
    // the batch-norm totals (smallcnn-bn); a rank finds it and the job ends. With overlap the
    // gradients travel on the bucket thread's communicator, the rest on the world's.
    for (const std::string impl : {"deterministic", "exact", "exact --model smallcnn-bn"}) {
        for (const std::string fault : {"corrupt", "truncate"}) {
            for (const std::string overlap : {"off", "on"}) {
                SCOPED_TRACE(impl + " " + fault + " overlap " + overlap);
                const std::string out =
                    "fault-" + std::to_string(impl.size()) + "-" + fault + "-" + overlap;
                const CliRun r = detrain(train_args(out) + " --model smallcnn --epochs 1 --impl " +
                                             impl + " --overlap " + overlap,
                                         "DT_TEST_FAULT=1:" + fault + " " + str_launch(2));
                EXPECT_NE(r.status, 0);
                EXPECT_NE((r.out + r.err).find("arrived corrupted or cut short"),
                          std::string::npos)
                    << r.err;
                EXPECT_FALSE(fs::exists(root_ / out / "result.json"));
            }
        }
    }
}

TEST_F(DataParallel, BatchNormWithoutSyncNormalisesEachPartOnItsOwn) {
    const std::string flags = "--model smallcnn-bn --impl exact";
    expect_ok(train(0, "bn-single", flags));
    expect_ok(train(2, "bn-local", flags + " --sync-bn off"));
    EXPECT_NE(result("bn-local").at("weights_sha256"), result("bn-single").at("weights_sha256"));
}

TEST_F(DataParallel, AKilledRankEndsTheJobAndTheRestartResumesAtAnotherProcessCount) {
    const std::string flags = "--model smallcnn-bn --impl exact --epochs 12 --checkpoint-every 2";
    expect_ok(train(0, "kill-single", flags));
    // P = 2 in the background; once its first checkpoint exists, rank 1 is killed.
    const fs::path out = root_ / "kill";
    const std::string cmd = "exec env " + str_launch(2) + DT_DETRAIN_EXE + " " +
                            train_args("kill") + " " + flags + " >" +
                            (root_ / "kill.out").string() + " 2>" + (root_ / "kill.err").string();
    const pid_t job = ::fork();
    if (job == 0) {
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    const auto start = std::chrono::steady_clock::now();
    while (!fs::exists(out / "checkpoint.safetensors") &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(fs::exists(out / "checkpoint.safetensors")) << "no checkpoint within 60 s";
    // Rank 1: the detrain process whose environment says so (Open MPI sets OMPI_COMM_WORLD_RANK).
    bool killed = false;
    for (const auto& p : fs::directory_iterator("/proc")) {
        const std::string env = dt::test::slurp(p.path() / "environ");
        const std::string cmdline = dt::test::slurp(p.path() / "cmdline");
        if (cmdline.find(out.string()) == std::string::npos) continue;
        if (cmdline.rfind(DT_DETRAIN_EXE, 0) != 0) continue;  // detrain itself, not mpiexec
        if (env.find(std::string("OMPI_COMM_WORLD_RANK=1") + '\0') == std::string::npos) continue;
        killed = ::kill(std::stoi(p.path().filename().string()), SIGKILL) == 0;
        break;
    }
    ASSERT_TRUE(killed) << "rank 1 not found (did the run end already?)";
    int status = 0;
    ASSERT_EQ(::waitpid(job, &status, 0), job);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "the job did not fail";
    EXPECT_LT(seconds, 60.0) << "the surviving rank did not end";
    EXPECT_FALSE(fs::exists(out / "result.json"));
    // The restart: the same command with --resume, at P = 3.
    expect_ok(train(3, "kill", flags + " --resume " + out.string()));
    expect_same("kill-single", "kill");
}

TEST_F(DataParallel, AStudySpreadsItsReplicasOverTheRanksAndReportsOnce) {
    // 2 variants (seeded: replicas repeat across studies) x 3 replicas over 2 ranks (rank 0:
    // replicas 0, 2, 4 of the list; rank 1 the others): the same study.json metrics and replica
    // weights as the study run alone.
    const std::string args = "study --variants control,init-perturb --replicas 3 --data-dir " +
                             (root_ / "data").string() +
                             " --epochs 1 --batch-size 32 --threads 1 --progress none --out ";
    const CliRun alone =
        dt::test::run_cli(DT_DETRAIN_EXE, args + (root_ / "study-1").string(), root_, "study-1");
    ASSERT_EQ(alone.status, 0) << alone.err;
    const CliRun spread = dt::test::run_cli(str_launch(2) + DT_DETRAIN_EXE,
                                            args + (root_ / "study-2").string(), root_, "study-2");
    ASSERT_EQ(spread.status, 0) << spread.err;
    std::size_t reports = 0, at = 0;
    while ((at = spread.out.find("report:", at)) != std::string::npos) ++reports, ++at;
    EXPECT_EQ(reports, 1u) << spread.out;
    const auto a = nlohmann::json::parse(dt::test::slurp(root_ / "study-1" / "study.json"));
    const auto b = nlohmann::json::parse(dt::test::slurp(root_ / "study-2" / "study.json"));
    ASSERT_EQ(a.at("variants").size(), b.at("variants").size());
    for (std::size_t v = 0; v < a.at("variants").size(); ++v) {
        const auto &va = a.at("variants")[v], &vb = b.at("variants")[v];
        EXPECT_EQ(va.at("metrics"), vb.at("metrics")) << va.at("name");
        for (std::size_t i = 0; i < 3; ++i)
            EXPECT_EQ(va.at("replicas")[i].at("weights_sha256"),
                      vb.at("replicas")[i].at("weights_sha256"));
    }
}

}  // namespace
