// SPDX-License-Identifier: MIT
// A fresh folder per test for tests that write files: <tmp>/<prefix><pid>_<test name>, emptied
// first (a crashed earlier run may have left it) and removed with the object. The pid and the
// test name keep parallel runs and tests apart; the prefix defaults to dt_<test suite name>_.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace dt::test {

struct TempDir {
    std::filesystem::path path;
    TempDir() : TempDir(std::string("dt_") + current_test()->test_suite_name() + "_") {}
    explicit TempDir(const std::string& prefix) {
        const auto* info = current_test();
        path = std::filesystem::temp_directory_path() /
               (prefix + std::to_string(getpid()) + "_" + info->name());
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string operator/(const std::string& f) const { return (path / f).string(); }

 private:
    static const ::testing::TestInfo* current_test() {
        return ::testing::UnitTest::GetInstance()->current_test_info();
    }
};

}  // namespace dt::test
