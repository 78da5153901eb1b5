// SPDX-License-Identifier: MIT
// FileSet (apps/run_outputs.h): the files of a run are replaced together or not at all. A write
// that fails (a full disk: the temporary file is /dev/full) leaves every previous file, and no
// temporary file behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "apps/run_outputs.h"
#include "engine/core/error.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

TEST(FileSet, ReplacesAllFilesOrNone) {
    test::TempDir dir("detrain-fileset-");
    const std::string a = dir / "a.txt", b = dir / "b.txt";
    FileSet first;
    first.add(a, "old a");
    first.add(b, "old b");
    first.commit();
    EXPECT_EQ(test::slurp(a), "old a");
    // The second file's temporary goes to /dev/full: its write fails with ENOSPC after the first
    // file has been written completely.
    fs::create_symlink("/dev/full", b + ".tmp." + std::to_string(::getpid()));
    try {
        FileSet second;
        second.add(a, "new a");
        second.add(b, std::string(1 << 16, 'x'));
        second.commit();
        ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find(b), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::slurp(a), "old a");
    EXPECT_EQ(test::slurp(b), "old b");
    for (const auto& e : fs::directory_iterator(dir.path))
        EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace dt
