// SPDX-License-Identifier: MIT
// The one way detrain replaces files. A file's new bytes go to its temporary "<path>.tmp"
// (created or truncated), are written completely and fsync'ed, then renamed over <path>, and the
// directory is fsync'ed: a reader sees the old file or the new one, never a part, whatever the
// moment of a crash, and a ".tmp" left by a killed process is overwritten by the next write.
// Several files form a set (AtomicFileSet): every temporary is complete before the first rename,
// so a failure while writing any of them (a full disk) replaces none and leaves no temporary.
// Used for weights and checkpoints (io::save_safetensors), run outputs and study files.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dt::io {

/// "<path>.tmp": where the next contents of `path` are staged.
std::string temporary_path(const std::string& path);

class AtomicFileSet {
 public:
    AtomicFileSet() = default;
    AtomicFileSet(const AtomicFileSet&) = delete;
    AtomicFileSet& operator=(const AtomicFileSet&) = delete;
    /// Removes the temporaries of files not committed.
    ~AtomicFileSet();

    /// Writes `parts`, concatenated, to path's temporary and fsyncs it. Throws IoError naming
    /// `path` and the errno text (the temporaries of the set are removed, nothing is replaced).
    void add(const std::string& path, const std::vector<std::string_view>& parts);
    void add(const std::string& path, std::string_view contents) {
        add(path, std::vector<std::string_view>{contents});
    }

    /// Renames every temporary over its path, in the order added, then fsyncs each directory
    /// once. Throws IoError naming the path that could not be renamed (those before it are
    /// replaced).
    void commit();

 private:
    std::vector<std::pair<std::string, std::string>> staged_;  // (temporary, path)
};

/// One file through an AtomicFileSet.
void write_file_atomically(const std::string& path, std::string_view contents);

/// Creates `dir` and its parents if needed and checks that a file can be created in it (so that
/// a run fails before it starts, not when it writes its results). Throws IoError naming the
/// path and the errno text, ValueError for an empty path.
void prepare_output_dir(const std::string& dir);

/// fsync of the directory holding `path` (makes a rename in it durable); best effort.
void fsync_parent_dir(const std::string& path);

}  // namespace dt::io
