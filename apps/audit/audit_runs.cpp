// SPDX-License-Identifier: MIT
// The audit's runs (contract in audit_runs.h).
#include "apps/audit/audit_runs.h"

#include <algorithm>
#include <sstream>

#include "apps/train/progress.h"
#include "engine/core/error.h"

namespace dt {

std::vector<std::string> split_words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

std::string join_words(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& w : v) s += (s.empty() ? "" : " ") + w;
    return s;
}

Trail run_traced(const TrainConfig& cfg, const TrailOptions& options) {
    autograd::TraceSink sink;
    sink.keep_row_hashes(options.row_hashes);
    if (options.keep_index >= 0) {
        sink.keep_values(options.keep_step, options.keep_index);
        sink.on_entry(nullptr, /*store=*/false);
    }
    Progress quiet(Progress::Mode::kNone);
    Trail t;
    {
        const autograd::ScopedTrace scope(sink);
        t.result = run_training(cfg, quiet);
    }
    t.entries = sink.entries();
    t.kept = sink.kept();
    return t;
}

std::pair<TrainConfig, TrainConfig> audit_configs(const std::vector<std::string>& a_flags,
                                                  const std::vector<std::string>& b_flags,
                                                  int64_t steps) {
    DT_CHECK_VALUE(steps >= 1, "audit: --steps ", steps, ": need at least 1");
    for (const char* refused :
         {"--replay", "--resume", "--out", "--checkpoint-every", "--stop-after", "--trace"}) {
        for (const auto* flags : {&a_flags, &b_flags}) {
            if (std::find(flags->begin(), flags->end(), refused) != flags->end())
                throw ValueError(str(refused,
                                     " is not an audit flag: an audit trains its runs "
                                     "in memory and writes nothing"));
        }
    }
    std::vector<uint64_t> draws;  // shared by both runs
    std::size_t next_a = 0, next_b = 0;
    auto entropy = [&](std::size_t& next) {
        if (next == draws.size()) draws.push_back(os_entropy64());
        return draws[next++];
    };
    TrainConfig a = parse_train_flag_list(a_flags, "audit");
    TrainConfig b = parse_train_flag_list(b_flags, "audit --vs");
    finalize_train_config(a, [&] { return entropy(next_a); });
    finalize_train_config(b, [&] { return entropy(next_b); });
    for (TrainConfig* c : {&a, &b}) {
        c->max_steps = steps;
        c->checkpoint_every = 0;
        c->progress = "none";
    }
    return {a, b};
}

}  // namespace dt
