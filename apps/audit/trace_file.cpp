// SPDX-License-Identifier: MIT
// Trace files (contract in trace_file.h).
#include "apps/audit/trace_file.h"

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fstream>

#include "engine/core/error.h"

namespace dt {

std::string trace_line(const TraceEntry& e) {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016" PRIx64, e.hash);
    const nlohmann::json j = {{"step", e.step}, {"index", e.index},   {"phase", e.phase},
                              {"op", e.op},     {"tensor", e.tensor}, {"shape", e.shape},
                              {"hash", hash}};
    return j.dump();
}

TraceFile read_trace(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw IoError(str("cannot read trace ", path, ": ", std::strerror(errno)));
    TraceFile t;
    std::string line;
    int64_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty()) continue;
        try {
            const nlohmann::json j = nlohmann::json::parse(line);
            if (number == 1) {
                DT_CHECK_VALUE(j.contains("detrain_trace"), "no \"detrain_trace\" header");
                t.header = j;
                continue;
            }
            TraceEntry e;
            e.step = j.at("step").get<int64_t>();
            e.index = j.at("index").get<int64_t>();
            e.phase = j.at("phase").get<std::string>();
            e.op = j.at("op").get<std::string>();
            e.tensor = j.at("tensor").get<std::string>();
            e.shape = j.at("shape").get<Shape>();
            const std::string h = j.at("hash").get<std::string>();
            DT_CHECK_VALUE(h.size() == 16, "hash \"", h, "\" is not 16 hex digits");
            e.hash = std::stoull(h, nullptr, 16);
            t.entries.push_back(std::move(e));
        } catch (const std::exception& ex) {
            throw ValueError(str(path, ":", number, ": not a detrain trace line (", ex.what(),
                                 "; hint: write traces with detrain train --trace FILE)"));
        }
    }
    DT_CHECK_VALUE(!t.header.is_null(), path, ": empty, not a detrain trace");
    return t;
}

TraceWriter::TraceWriter(const std::string& path, const nlohmann::json& header) : path_(path) {
    f_ = std::fopen(path.c_str(), "w");
    if (f_ == nullptr)
        throw IoError(str("--trace ", path, ": cannot write: ", std::strerror(errno)));
    std::fprintf(f_, "%s\n", header.dump().c_str());
}

TraceWriter::~TraceWriter() {
    if (f_ != nullptr) std::fclose(f_);
}

void TraceWriter::write(const TraceEntry& e) {
    if (std::fprintf(f_, "%s\n", trace_line(e).c_str()) < 0)
        throw IoError(str("--trace ", path_, ": write failed: ", std::strerror(errno)));
    if (e.phase == "update") std::fflush(f_);
}

}  // namespace dt
