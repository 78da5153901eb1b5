// SPDX-License-Identifier: MIT
// io::AtomicFileSet (engine/io/atomic_file.h), the one atomic writer: files of a set are replaced
// together or not at all. A write that fails (a full disk: the temporary is /dev/full) leaves
// every previous file and no temporary; a ".tmp" left by a killed writer is overwritten by the
// next write; several parts are written as one file; a failed rename names the path.
#include "engine/io/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

TEST(AtomicFileSet, ReplacesAllFilesOrNone) {
    test::TempDir dir("detrain-atomic-");
    const std::string a = dir / "a.txt", b = dir / "b.txt";
    io::AtomicFileSet first;
    first.add(a, "old a");
    first.add(b, "old b");
    first.commit();
    EXPECT_EQ(test::slurp(a), "old a");
    // The second file's temporary goes to /dev/full: its write fails with ENOSPC after the first
    // file has been written completely.
    fs::create_symlink("/dev/full", io::temporary_path(b));
    try {
        io::AtomicFileSet second;
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

TEST(AtomicFileSet, PartsMakeOneFileAndALeftoverTemporaryIsOverwritten) {
    test::TempDir dir("detrain-atomic-");
    const std::string p = dir / "w.bin";
    std::ofstream(io::temporary_path(p)) << "a partial file of a killed writer, longer than new";
    io::AtomicFileSet set;
    set.add(p, {"ab", "", "cde"});
    set.commit();
    EXPECT_EQ(test::slurp(p), "abcde");
    EXPECT_FALSE(fs::exists(io::temporary_path(p)));
    io::write_file_atomically(p, "x");
    EXPECT_EQ(test::slurp(p), "x");
}

TEST(AtomicFileSet, AFailedRenameNamesThePathAndKeepsTheDirectory) {
    test::TempDir dir("detrain-atomic-");
    const std::string target = dir / "is_a_dir";
    fs::create_directories(target + "/child");
    try {
        io::write_file_atomically(target, "bytes");
        ADD_FAILURE() << "renaming over a non-empty directory succeeded";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("rename"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::is_directory(target));
    EXPECT_FALSE(fs::exists(io::temporary_path(target)));
}

TEST(PrepareOutputDir, CreatesParentsAndRefusesAFile) {
    test::TempDir dir("detrain-atomic-");
    io::prepare_output_dir(dir / "x/y");
    EXPECT_TRUE(fs::is_directory(dir.path / "x" / "y"));
    std::ofstream(dir / "file") << "f";
    EXPECT_THROW(io::prepare_output_dir(dir / "file"), IoError);
    EXPECT_THROW(io::prepare_output_dir(""), ValueError);
}

}  // namespace
}  // namespace dt
