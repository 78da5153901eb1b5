// SPDX-License-Identifier: MIT
// Atomic file replacement (contract in atomic_file.h): POSIX open/write/fsync/rename.
#include "engine/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/core/error.h"

namespace dt::io {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_io(const std::string& what, const std::string& path, int err) {
    throw IoError(str(what, " ", path, ": ", std::strerror(err)));
}

/// Writes all of `data` to fd; returns 0 or the errno of the failure.
int write_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, data, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        data += w;
        n -= static_cast<std::size_t>(w);
    }
    return 0;
}

}  // namespace

std::string temporary_path(const std::string& path) { return path + ".tmp"; }

AtomicFileSet::~AtomicFileSet() {
    for (const auto& [tmp, path] : staged_) ::unlink(tmp.c_str());
}

void AtomicFileSet::add(const std::string& path, const std::vector<std::string_view>& parts) {
    const std::string tmp = temporary_path(path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw_io("cannot write", path, errno);
    staged_.emplace_back(tmp, path);  // removed by the destructor unless committed
    int err = 0;
    for (std::string_view p : parts) {
        if (err == 0) err = write_all(fd, p.data(), p.size());
    }
    if (err == 0 && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) throw_io("cannot write", path, err);
}

void AtomicFileSet::commit() {
    for (std::size_t i = 0; i < staged_.size(); ++i) {
        const auto& [tmp, path] = staged_[i];
        if (::rename(tmp.c_str(), path.c_str()) != 0) {
            const int err = errno;
            staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(i));
            throw_io("cannot rename " + tmp + " into place as", path, err);
        }
    }
    std::vector<fs::path> synced;  // each directory once, after all its renames
    for (const auto& [tmp, path] : staged_) {
        const fs::path dir = fs::path(path).parent_path();
        if (std::find(synced.begin(), synced.end(), dir) != synced.end()) continue;
        synced.push_back(dir);
        fsync_parent_dir(path);
    }
    staged_.clear();
}

void write_file_atomically(const std::string& path, std::string_view contents) {
    AtomicFileSet files;
    files.add(path, contents);
    files.commit();
}

void prepare_output_dir(const std::string& dir) {
    DT_CHECK_VALUE(!dir.empty(), "the output directory must not be empty");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw IoError(str("cannot create output directory ", dir, ": ", ec.message()));
    if (!fs::is_directory(dir, ec)) {
        throw IoError(str("output path ", dir, " exists but is not a directory"));
    }
    // Probe: creating a file is what the run will need at the end, so fail now, not then.
    const std::string probe = dir + "/.detrain-write-test." + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw_io("cannot write into output directory", dir, errno);
    ::close(fd);
    ::unlink(probe.c_str());
}

void fsync_parent_dir(const std::string& path) {
    const fs::path dir = fs::path(path).parent_path();
    const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)::fsync(fd);
    ::close(fd);
}

}  // namespace dt::io
