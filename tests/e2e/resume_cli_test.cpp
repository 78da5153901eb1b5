// SPDX-License-Identifier: MIT
// End to end, crash safety of `detrain train` (issue 6): a run killed with SIGKILL 20 times, half
// of them while a checkpoint is being written and half during training steps, and resumed with
// --resume after each kill, ends with the weights_sha256 and the epoch losses of a run never
// interrupted; after every kill the checkpoint on disk is complete and valid. A run killed before
// its first checkpoint restarts from the beginning with the same --resume command (issue 19), and
// with --resume DIR alone from the run plan (issue 47). Also the messages of a bad --resume, and a
// full disk (writes past a file-size limit fail) that leaves the previous run's files intact.
// Synthetic data (tests/support/synthetic_idx.h). Budget: ~20 s on 2 cores.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "apps/train/checkpoint.h"
#include "kernels/common/philox.h"
#include "tests/support/detrain_suite.h"
#include "tests/support/rng.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using dt::test::CliRun;

class ResumeCli : public dt::test::DetrainSuite<ResumeCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-kill", 512, 128};

 protected:
    /// `detrain train` flags of the run into root/<out>: 4 epochs of 32 steps, a checkpoint
    /// every 2 steps.
    static std::string train_args(const std::string& out) {
        return train_into(out) +
               " --epochs 4 --batch-size 16 --lr 2e-3 --eval-batch-size 64 --threads 2"
               " --progress none --checkpoint-every 2";
    }

    /// The run in root/<out> ended with the weights and first-epoch loss of the one in root/<ref>
    /// (restarted from `state`).
    static void expect_same_first_epoch(const std::string& out, const std::string& ref, int state) {
        EXPECT_EQ(result(out).at("weights_sha256"), result(ref).at("weights_sha256"))
            << "state " << state;
        EXPECT_EQ(result(out).at("history").at(0).at("train_loss"),
                  result(ref).at("history").at(0).at("train_loss"))
            << "state " << state;
    }
};

/// A `detrain` process started with fork/exec (output discarded), to be killed.
struct Child {
    pid_t pid = -1;
    explicit Child(const std::string& args) {
        const std::string cmd =
            std::string("exec ") + DT_DETRAIN_EXE + " " + args + " >/dev/null 2>&1";
        pid = ::fork();
        if (pid == 0) {
            ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    /// True (and the status is collected) once the process has ended.
    bool ended(int& status) const { return ::waitpid(pid, &status, WNOHANG) == pid; }
};

/// The inode of `p`, 0 when absent: each checkpoint write renames a new file into place.
ino_t inode_of(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST_F(ResumeCli, TwentyKillsAndResumesGiveTheUninterruptedWeights) {
    const CliRun ref = detrain(train_args("ref"));
    ASSERT_EQ(ref.status, 0) << ref.err;
    const fs::path dir = root_ / "killed";
    const fs::path ckpt = dt::checkpoint_path(dir.string()), tmp = ckpt.string() + ".tmp";
    const uint64_t seed = dt::test::test_seed();
    int kills_in_write = 0;
    int64_t last_step = 0;
    for (int kill = 0; kill < 20; ++kill) {
        SCOPED_TRACE(testing::Message() << "kill " << kill + 1 << ", seed " << seed);
        const bool resume = fs::exists(ckpt);
        Child child(train_args("killed") + (resume ? " --resume " + dir.string() : ""));
        ASSERT_GT(child.pid, 0);
        const dt::kernels::common::Philox4 r = dt::kernels::common::philox_draw(
            seed, dt::kernels::common::RngStream::kTest, static_cast<uint64_t>(kill), 7);
        const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
        int status = 0;
        bool ended = false;
        if (kill % 2 == 1) {  // during a checkpoint write: as soon as the temporary file exists
            while (!fs::exists(tmp) && !(ended = child.ended(status)) && Clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::microseconds(20));
        } else {  // during steps: after 1 or 2 new checkpoints, then 0-4 ms (about a step)
            const int writes = 1 + static_cast<int>(r.v[0] % 2);
            ino_t seen = inode_of(ckpt);
            for (int w = 0; w < writes && !ended;) {
                if (const ino_t now = inode_of(ckpt); now != 0 && now != seen) seen = now, ++w;
                ended = child.ended(status);
                ASSERT_LT(Clock::now(), deadline);
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
            std::this_thread::sleep_for(std::chrono::microseconds(r.v[1] % 4000));
        }
        ASSERT_FALSE(ended) << "the run ended (status " << status << ") before kill " << kill + 1
                            << ": the test's run is too short";
        ASSERT_LT(Clock::now(), deadline);
        ::kill(child.pid, SIGKILL);
        ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
        ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
        kills_in_write += fs::exists(tmp);
        // Never a corrupt checkpoint, and never an older one than before.
        if (fs::exists(ckpt)) {
            dt::Checkpoint ck;
            ASSERT_NO_THROW(ck = dt::read_checkpoint(dir.string()));
            EXPECT_GE(ck.position.global_step, last_step);
            last_step = ck.position.global_step;
        }
    }
    const CliRun done = detrain(train_args("killed") + " --resume " + dir.string());
    ASSERT_EQ(done.status, 0) << done.err;
    const nlohmann::json killed = result("killed"), whole = result("ref");
    EXPECT_EQ(killed.at("weights_sha256"), whole.at("weights_sha256"));
    const nlohmann::json& a = killed.at("history");
    const nlohmann::json& b = whole.at("history");
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t e = 0; e < a.size(); ++e) {
        EXPECT_EQ(a[e].at("train_loss"), b[e].at("train_loss")) << "epoch " << e + 1;
        EXPECT_EQ(a[e].at("test_accuracy"), b[e].at("test_accuracy")) << "epoch " << e + 1;
    }
    // The write kills are aimed at the moment the temporary file appears; a few may land just
    // after the rename.
    EXPECT_GE(kills_in_write, 5);
    RecordProperty("kills_during_checkpoint_writes", kills_in_write);
    std::printf("[ kills ] 20 SIGKILLs, %d during a checkpoint write (a .tmp left behind)\n",
                kills_in_write);
}

TEST_F(ResumeCli, AKillBeforeTheFirstCheckpointRestartsWithTheSameCommand) {
    const CliRun ref = detrain(train_args("ref0") + " --epochs 1");
    ASSERT_EQ(ref.status, 0) << ref.err;
    // The restart command is the one a job system would repeat after every kill: the run's flags
    // with --resume DIR. A kill before the first checkpoint leaves one of three states, made here
    // on purpose (a timed kill cannot promise to land before the first checkpoint on a fast
    // machine): no directory yet, an empty one, or one with a half-written first checkpoint.
    const fs::path dir = root_ / "early";
    const std::string resume = train_args("early") + " --epochs 1 --resume " + dir.string();
    for (int state = 0; state < 3; ++state) {
        fs::remove_all(dir);
        if (state >= 1) fs::create_directories(dir);
        if (state == 2) {
            std::ofstream(dt::checkpoint_path(dir.string()) + ".tmp", std::ios::binary)
                << "DTCKPT half written";
        }
        const CliRun r = detrain(resume);
        ASSERT_EQ(r.status, 0) << "state " << state << ": " << r.err;
        EXPECT_NE(r.err.find("starting the run from the beginning"), std::string::npos)
            << "state " << state << ": " << r.err;
        expect_same_first_epoch("early", "ref0", state);
    }
    // And a real SIGKILL at once: whether or not a checkpoint made it to disk, the same command
    // finishes the run with the bits of one never interrupted.
    fs::remove_all(dir);
    Child child(resume);
    ASSERT_GT(child.pid, 0);
    ::kill(child.pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
    const CliRun again = detrain(resume);
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(result("early").at("weights_sha256"), result("ref0").at("weights_sha256"));
    // Once finished (a result.json, no checkpoint left to continue: --checkpoint-every 0), a
    // DIR is no run to resume.
    ASSERT_EQ(detrain(train_args("fin") + " --epochs 1 --checkpoint-every 0").status, 0);
    const CliRun fin = detrain(train_args("fin") + " --epochs 1 --checkpoint-every 0 --resume " +
                               (root_ / "fin").string());
    EXPECT_EQ(fin.status, 1);
    EXPECT_NE(fin.err.find("holds a finished run"), std::string::npos) << fin.err;
    // A fresh start still writes where --resume says.
    const CliRun other =
        detrain(train_args("x") + " --epochs 1 --resume " + (root_ / "y").string());
    EXPECT_EQ(other.status, 1);
    EXPECT_NE(other.err.find("writes into its --resume directory"), std::string::npos) << other.err;
}

TEST_F(ResumeCli, ABareResumeRestartsARunKilledBeforeItsFirstCheckpoint) {
    // The run plan (run_plan.json) is written before the first step: `--resume DIR` alone then
    // knows the run. A kill before the first checkpoint leaves the plan and at most a half-written
    // first checkpoint, made here on purpose (a timed kill cannot promise to land before the
    // first checkpoint on a fast machine), then with a real SIGKILL as soon as the plan exists.
    const CliRun ref = detrain(train_args("ref1") + " --epochs 1");
    ASSERT_EQ(ref.status, 0) << ref.err;
    const std::string plan = dt::test::slurp(root_ / "ref1" / "run_plan.json");
    ASSERT_NE(plan.find("\"detrain-run-plan\""), std::string::npos) << plan;
    const fs::path dir = root_ / "planned";
    for (int state = 0; state < 2; ++state) {
        fs::remove_all(dir);
        fs::create_directories(dir);
        std::ofstream(dir / "run_plan.json", std::ios::binary) << plan;
        if (state == 1) {
            std::ofstream(dt::checkpoint_path(dir.string()) + ".tmp", std::ios::binary)
                << "DTCKPT half written";
        }
        const CliRun r = detrain("train --resume " + dir.string());
        ASSERT_EQ(r.status, 0) << "state " << state << ": " << r.err;
        EXPECT_NE(r.err.find("run_plan.json from the beginning"), std::string::npos) << r.err;
        expect_same_first_epoch("planned", "ref1", state);
    }
    // A real kill: as soon as the plan is on disk (no checkpoint yet with --checkpoint-every 0).
    fs::remove_all(dir);
    Child child(train_args("planned") + " --epochs 1 --checkpoint-every 0");
    ASSERT_GT(child.pid, 0);
    int status = 0;
    bool ended = false;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!fs::exists(dir / "run_plan.json") && !(ended = child.ended(status)) &&
           Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_FALSE(ended) << "the run ended (status " << status << ") before its plan was seen";
    ::kill(child.pid, SIGKILL);
    ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
    ASSERT_FALSE(fs::exists(dir / "result.json")) << "the kill landed after the run's end";
    ASSERT_FALSE(fs::exists(dt::checkpoint_path(dir.string())));
    const CliRun again = detrain("train --resume " + dir.string());
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(result("planned").at("weights_sha256"), result("ref1").at("weights_sha256"));
}

TEST_F(ResumeCli, ABareResumeOfNoRunFailsAtOnceAndWritesNothing) {
    // A mistyped DIR, or one that holds no run: refused before anything is written, saying what
    // is missing, without a source location (a user's error, not the program's).
    const fs::path missing = root_ / "no-such-run";
    CliRun r = detrain("train --resume " + missing.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("there is no such directory"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(missing)) << "a refused --resume created its directory";
    const fs::path empty = root_ / "empty-run";
    fs::create_directories(empty);
    r = detrain("train --resume " + empty.string() + " --threads 1");  // a run option only
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("holds no run plan"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(empty)) << "a refused --resume wrote into its directory";
    for (const std::string& err : {detrain("train --resume " + missing.string()).err, r.err}) {
        EXPECT_EQ(err.find(".cpp:"), std::string::npos) << err;
        EXPECT_EQ(err.find("failed at"), std::string::npos) << err;
    }
}

TEST_F(ResumeCli, BadResumesFailWithAMessage) {
    CliRun r;
    // A corrupt checkpoint: one flipped byte in the data.
    ASSERT_EQ(detrain(train_args("bad") + " --epochs 1").status, 0);
    const fs::path ckpt = dt::checkpoint_path((root_ / "bad").string());
    std::string bytes = dt::test::slurp(ckpt);
    bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 0x10);
    std::ofstream(ckpt, std::ios::binary | std::ios::trunc) << bytes;
    r = detrain(train_args("bad") + " --epochs 1 --resume " + (root_ / "bad").string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("is corrupt: its checksum does not match"), std::string::npos) << r.err;
    // A truncated one (a copy cut short: the writer itself never leaves one).
    std::ofstream(ckpt, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 3);
    r = detrain(train_args("bad") + " --epochs 1 --resume " + (root_ / "bad").string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(ckpt.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("data section"), std::string::npos) << r.err;
    // Differing flags are listed; --replay does not combine with --resume.
    ASSERT_EQ(detrain(train_args("ok") + " --epochs 1").status, 0);
    const std::string ok = (root_ / "ok").string();
    r = detrain(train_args("ok") + " --epochs 1 --lr 0.5 --resume " + ok);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--lr: the run has 0.002, given 0.5"), std::string::npos) << r.err;
    r = detrain(train_args("ok") + " --replay x.json --resume " + ok);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--resume and --replay cannot be combined"), std::string::npos) << r.err;
    r = detrain(train_args("ok") + " --checkpoint-every -1");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--checkpoint-every: got -1"), std::string::npos) << r.err;
}

TEST_F(ResumeCli, StopAfterEndsWithACheckpointAndResumeFinishesTheRun) {
    ASSERT_EQ(detrain(train_args("stop-ref") + " --epochs 1").status, 0);
    const std::string dir = (root_ / "stop").string();
    CliRun r = detrain(train_args("stop") + " --epochs 1 --stop-after 5");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("after global step 5 of 32"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("detrain train --resume " + dir), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(root_ / "stop" / "result.json"));
    EXPECT_EQ(dt::read_checkpoint(dir).position.global_step, 5);
    r = detrain(train_args("stop") + " --epochs 1 --stop-after 3 --resume " + dir);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--stop-after 3: the run is at global step 5 already"), std::string::npos)
        << r.err;
    r = detrain(train_args("stop") + " --epochs 1 --resume " + dir);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(result("stop").at("weights_sha256"), result("stop-ref").at("weights_sha256"));
    EXPECT_FALSE(result("stop").at("config").contains("stop-after"));
    r = detrain(train_args("x") + " --stop-after -2");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--stop-after: got -2"), std::string::npos) << r.err;
}

TEST_F(ResumeCli, AFullDiskLeavesThePreviousRunsFiles) {
    ASSERT_EQ(detrain(train_args("full") + " --epochs 1").status, 0);
    const fs::path dir = root_ / "full";
    const std::string names[] = {"result.json", "weights.safetensors", "predictions.csv",
                                 "test_logits.safetensors", "checkpoint.safetensors"};
    std::vector<std::string> before;
    for (const std::string& n : names) before.push_back(dt::test::slurp(dir / n));
    // Files may grow to 64 KiB only (writes past it fail with EFBIG, as on a full disk, once
    // SIGXFSZ is ignored): the checkpoint (~1 MB) and the weights cannot be written.
    for (const char* extra : {" --checkpoint-every 1", " --checkpoint-every 0"}) {
        SCOPED_TRACE(extra);
        const CliRun r = detrain(train_args("full") + " --epochs 1 --seed 3" + extra,
                                 "trap '' XFSZ; ulimit -f 64; exec ");
        EXPECT_EQ(r.status, 1);
        EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(dir.string()), std::string::npos) << r.err;
        for (std::size_t i = 0; i < before.size(); ++i)
            EXPECT_EQ(dt::test::slurp(dir / names[i]), before[i]) << names[i] << " changed";
        for (const auto& e : fs::directory_iterator(dir))
            EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
    }
}

}  // namespace
