// SPDX-License-Identifier: MIT
// The trace file of `detrain train --trace FILE` (docs/audit.md): JSON lines. The first line is
// a header, {"detrain_trace": 1, "detrain_version": ..., "command_line": ..., "config": {...}},
// every other line one entry of the hash trail (engine/autograd/trace.h):
//   {"step": 0, "index": 3, "phase": "forward", "op": "conv2d", "tensor": "output",
//    "shape": [128, 32, 28, 28], "hash": "9f0c2a7d11e4b803"}
// The file is written while training (flushed after every step's update entries), so a killed
// run leaves the trail up to its last step.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/autograd/trace.h"

namespace dt {

using autograd::TraceEntry;

/// One entry as its JSON line (without the newline).
std::string trace_line(const TraceEntry& e);

struct TraceFile {
    nlohmann::json header;
    std::vector<TraceEntry> entries;
};

/// Reads a trace file; IoError for an unreadable file, ValueError naming the file and line for
/// a line that is not a trace entry.
TraceFile read_trace(const std::string& path);

/// Writes the header at construction and every entry given to write(); flushes after each
/// entry of phase "update" (the end of a step). IoError when the file cannot be written.
class TraceWriter {
 public:
    TraceWriter(const std::string& path, const nlohmann::json& header);
    ~TraceWriter();
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;
    void write(const TraceEntry& e);

 private:
    std::string path_;
    std::FILE* f_ = nullptr;
};

}  // namespace dt
