// SPDX-License-Identifier: MIT
// End to end, `detrain study` (issue 4, docs/study.md) through the real executable on synthetic
// IDX data (tests/support/synthetic_idx.h): control replicas are bit-identical (churn, weight
// distance and stddev exactly 0), random seeds make replicas differ, a study killed with SIGKILL
// in the middle of a replica resumes without repeating finished replicas and ends with the
// results of an uninterrupted study, the outputs exist and parse, bad flags fail clearly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/support/detrain_suite.h"
#include "tests/support/synthetic_text.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class StudyCli : public dt::test::DetrainSuite<StudyCli> {
 public:
    static constexpr dt::test::SyntheticRoot kRoot{"detrain-study-e2e", 128, 48};

 protected:
    /// Train flags of every study here: 1 epoch of 4 steps.
    static std::string train_flags() {
        return "--data-dir " + (root_ / "data").string() +
               " --epochs 1 --batch-size 32 --threads 1";
    }
    static std::string study_args(const std::string& out, const std::string& variants,
                                  int replicas) {
        return "study --out " + (root_ / out).string() + " --variants " + variants +
               " --replicas " + std::to_string(replicas) + " " + train_flags();
    }
    static json study_json(const std::string& out) {
        return json::parse(dt::test::slurp(root_ / out / "study.json"));
    }
    static const json& variant(const json& study, const std::string& name) {
        for (const json& v : study.at("variants")) {
            if (v.at("name") == name) return v;
        }
        throw std::runtime_error("no variant " + name);
    }
};

TEST_F(StudyCli, ControlReplicasAreIdenticalAndRandomSeedsAreNot) {
    // Two replicas at a time (--jobs 2): the parallel path of the runner.
    const dt::test::CliRun r = detrain(study_args("s1", "control,algo", 3) + " --jobs 2");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("report.md"), std::string::npos) << r.out;
    const json s = study_json("s1");
    const json& control = variant(s, "control").at("metrics");
    EXPECT_EQ(control.at("acc_std").get<double>(), 0.0);
    EXPECT_EQ(control.at("churn").at("mean").get<double>(), 0.0);
    EXPECT_EQ(control.at("weight_distance").at("mean").get<double>(), 0.0);
    const json& reps = variant(s, "control").at("replicas");
    ASSERT_EQ(reps.size(), 3u);
    for (const json& rep : reps) EXPECT_EQ(rep.at("weights_sha256"), reps[0].at("weights_sha256"));
    // algo: each replica draws its own seeds, so the weights differ.
    const json& algo = variant(s, "algo");
    EXPECT_GT(algo.at("metrics").at("weight_distance").at("mean").get<double>(), 0.0);
    EXPECT_NE(algo.at("replicas")[0].at("seeds"), algo.at("replicas")[1].at("seeds"));
    for (const char* f :
         {"summary.csv", "report.md", "plots/churn.svg", "plots/accuracy_stddev.svg",
          "plots/weight_distance.svg", "plots/per_class_stddev.svg"}) {
        EXPECT_TRUE(fs::exists(root_ / "s1" / f)) << f;
    }
    const std::string csv = dt::test::slurp(root_ / "s1" / "summary.csv");
    EXPECT_EQ(csv.rfind("variant,replicas,", 0), 0u) << csv;
    EXPECT_NE(csv.find("\ncontrol,3,"), std::string::npos) << csv;
}

TEST_F(StudyCli, AGptStudyReportsTheValidationLossAndTokenChurn) {
    const std::string text = dt::test::write_synthetic_text((root_ / "text.txt").string(), 8000, 7);
    const dt::test::CliRun r =
        detrain("study --out " + (root_ / "gpt").string() +
                " --variants control,algo --replicas 2 " + "--model gpt --data-file " + text +
                " --layers 1 --heads 2 --width 16 --context 16 --limit-train 64 --limit-test 16 "
                "--epochs 1 --threads 1");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("validation loss"), std::string::npos) << r.out;
    const json s = study_json("gpt");
    const json& control = variant(s, "control").at("metrics");
    EXPECT_EQ(control.at("validation_loss_std").get<double>(), 0.0);
    EXPECT_EQ(control.at("churn").at("mean").get<double>(), 0.0);
    const json& algo = variant(s, "algo").at("metrics");
    EXPECT_GT(algo.at("validation_loss_std").get<double>(), 0.0);
    EXPECT_GT(algo.at("churn").at("mean").get<double>(), 0.0);  // per validation token
    EXPECT_GT(algo.at("validation_loss_mean").get<double>(), 0.0);
    EXPECT_TRUE(fs::exists(root_ / "gpt" / "plots" / "validation_loss_stddev.svg"));
    EXPECT_FALSE(fs::exists(root_ / "gpt" / "plots" / "per_class_stddev.svg"));
    const std::string report = dt::test::slurp(root_ / "gpt" / "report.md");
    EXPECT_NE(report.find("bits per byte"), std::string::npos);
    EXPECT_EQ(report.find("per_class_stddev.svg"), std::string::npos);
}

TEST_F(StudyCli, KilledStudyResumesWithoutRepeatingReplicas) {
    // Uninterrupted reference (deterministic variants only: results must be identical).
    const std::string variants = "control,init-perturb";
    ASSERT_EQ(detrain(study_args("ref", variants, 3)).status, 0);

    // Start the same study, kill -9 it while a later replica trains.
    const std::string cmd =
        std::string(DT_DETRAIN_EXE) + " " + study_args("killed", variants, 3) + " >/dev/null 2>&1";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    const fs::path first = root_ / "killed" / "replicas" / "control" / "0" / "result.json";
    const fs::path second_dir = root_ / "killed" / "replicas" / "control" / "1";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!(fs::exists(first) && fs::exists(second_dir)) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(fs::exists(first)) << "the study did not finish its first replica in time";
    const auto first_time = fs::last_write_time(first);
    EXPECT_FALSE(fs::exists(root_ / "killed" / "study.json")) << "killed before the end";

    const dt::test::CliRun r = detrain(study_args("killed", variants, 3));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(fs::last_write_time(first), first_time) << "a finished replica was trained again";
    EXPECT_NE(r.err.find("finished earlier, kept"), std::string::npos) << r.err;

    const json a = study_json("ref"), b = study_json("killed");
    for (const char* v : {"control", "init-perturb"}) {
        EXPECT_EQ(variant(a, v).at("metrics"), variant(b, v).at("metrics")) << v;
        for (std::size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(variant(a, v).at("replicas")[i].at("weights_sha256"),
                      variant(b, v).at("replicas")[i].at("weights_sha256"))
                << v << " #" << i;
        }
    }
    // init-perturb: one bit of one initial weight is enough to move the trained weights.
    EXPECT_GT(
        variant(a, "init-perturb").at("metrics").at("weight_distance").at("mean").get<double>(),
        0.0);
}

TEST_F(StudyCli, ReportOnlyReportsTheFinishedReplicasAndTrainsNothing) {
    ASSERT_EQ(detrain(study_args("partial", "control,algo", 2)).status, 0);
    // Ask for 3 replicas: the third of each variant does not exist; nothing may be trained.
    const dt::test::CliRun r = detrain(study_args("partial", "control,algo", 3) + " --report-only");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(fs::exists(root_ / "partial" / "replicas" / "control" / "2"));
    const json s = study_json("partial");
    EXPECT_EQ(variant(s, "control").at("replicas").size(), 2u);
    EXPECT_EQ(variant(s, "control").at("metrics").at("replicas"), 2);
    EXPECT_NE(s.at("notes")[0].get<std::string>().find("4 of 6 replicas finished"),
              std::string::npos)
        << s.at("notes");
    // With every asked-for replica there, the report says so instead of "partial".
    ASSERT_EQ(detrain(study_args("partial", "control,algo", 2) + " --report-only").status, 0);
    const json full = study_json("partial");
    EXPECT_NE(full.at("notes")[0].get<std::string>().find("all 4 replicas had finished"),
              std::string::npos)
        << full.at("notes");
    // A directory without a study is refused.
    const dt::test::CliRun none = detrain(study_args("nothing", "control", 2) + " --report-only");
    EXPECT_NE(none.status, 0);
    EXPECT_NE(none.err.find("holds no study"), std::string::npos) << none.err;
    EXPECT_FALSE(fs::exists(root_ / "nothing")) << "--report-only created a directory";
}

TEST_F(StudyCli, AStudyWithOtherTrainFlagsIsRefusedInTheSameDirectory) {
    ASSERT_EQ(detrain(study_args("plan", "control", 2)).status, 0);
    const dt::test::CliRun r = detrain(study_args("plan", "control", 2) + " --lr 0.001");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--lr 0.001"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("another"), std::string::npos) << r.err;
}

TEST_F(StudyCli, BadFlagsFailBeforeTraining) {
    struct Case {
        std::string args, expect;
    };
    for (const Case& c : {Case{study_args("b1", "nonsense", 2), "unknown variant 'nonsense'"},
                          Case{study_args("b2", "control", 1), "--replicas 1"},
                          Case{study_args("b3", "augment", 2), "--augment"},
                          Case{study_args("b4", "control", 2) + " --lr -1", "--lr"},
                          Case{study_args("b5", "control", 2) + " --subgroup x=", "--subgroup"},
                          Case{study_args("b6", "algo@nomodel", 2), "unknown model 'nomodel'"}}) {
        const dt::test::CliRun r = detrain(c.args);
        EXPECT_NE(r.status, 0) << c.args;
        EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    }
    EXPECT_FALSE(fs::exists(root_ / "b4" / "replicas")) << "a bad train flag started training";
}

}  // namespace
