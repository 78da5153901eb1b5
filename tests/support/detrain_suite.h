// SPDX-License-Identifier: MIT
// The fixture of the suites that run the real `detrain` executable (DT_DETRAIN_EXE, defined by
// the test target) on the synthetic IDX data of synthetic_idx.h: the data is written into a
// scratch root before the suite's first test and removed after its last, and every run's stdout
// and stderr land in that root. Suite is the derived fixture (CRTP: each suite has a root of its
// own) and names the root and the split sizes:
//   class NoiseCli : public dt::test::DetrainSuite<NoiseCli> {
//    public:
//       static constexpr dt::test::SyntheticRoot kRoot{"detrain-noise-e2e", 256, 64};
//   };
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/synthetic_idx.h"

namespace dt::test {

/// <tmp>/<name>-<pid> holding n_train training and n_test test examples.
struct SyntheticRoot {
    const char* name;
    int n_train, n_test;
};

template <class Suite>
class DetrainSuite : public ::testing::Test {
 public:
    static void SetUpTestSuite() {
        root_ = make_synthetic_root(Suite::kRoot.name, Suite::kRoot.n_train, Suite::kRoot.n_test);
    }
    static void TearDownTestSuite() { remove_synthetic_root(root_); }

 protected:
    /// `detrain <args>`, started through `launcher` (e.g. "mpiexec -np 2 ") when one is given.
    static CliRun detrain(const std::string& args, const std::string& launcher = "") {
        return run_cli(launcher + DT_DETRAIN_EXE, args, root_, std::to_string(counter_++));
    }
    /// "train --data-dir <the synthetic data> --out root/<out>": a run's first flags.
    static std::string train_into(const std::string& out) {
        return "train --data-dir " + (root_ / "data").string() + " --out " + (root_ / out).string();
    }
    /// result.json of the run written into root/<out>.
    static nlohmann::json result(const std::string& out) {
        return nlohmann::json::parse(slurp(root_ / out / "result.json"));
    }

    static inline std::filesystem::path root_;
    static inline int counter_ = 0;
};

}  // namespace dt::test
