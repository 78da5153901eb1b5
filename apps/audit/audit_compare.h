// SPDX-License-Identifier: MIT
// Comparing two hash trails (engine/autograd/trace.h) entry by entry: the first entry whose bits
// differ, how the difference spreads over the later entries and steps, and (from the kept values
// of that entry in both runs) how many elements differ and by how many ULPs.
#pragma once
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/autograd/trace.h"
#include "engine/core/ulp.h"

namespace dt {

using autograd::TraceEntry;

struct FirstDifference {
    TraceEntry a, b;          // the entry in run A and in run B
    bool structural = false;  // op, tensor or shape differ, not only the bits
    // From the values (values_known): elements, how many differ, the largest ULP distance and
    // relative difference |a - b| / max(|a|, |b|) over them.
    bool values_known = false;
    int64_t elements = 0, differing = 0;
    double max_ulp = 0, max_relative = 0;
};

struct StepSpread {
    int64_t step = 0;
    int64_t differing = 0, total = 0;    // entries of the step whose hashes differ, entries
    std::vector<std::string> first_ops;  // the first few differing entries, "op tensor"
};

struct AuditResult {
    std::optional<FirstDifference> first;  // none: the trails are bitwise identical
    std::vector<StepSpread> spread;        // every step from the first differing one
    int64_t entries_a = 0, entries_b = 0;
    int64_t steps = 0;                                 // steps in both trails: the ones compared
    int64_t steps_only_a = 0, steps_only_b = 0;        // steps one trail has and the other lacks
    int64_t weights_differing = 0, weights_total = 0;  // the last step's update entries
};

/// Entry-by-entry comparison (entries matched by (step, index)) over the steps both trails hold.
AuditResult compare_trails(const std::vector<TraceEntry>& a, const std::vector<TraceEntry>& b);

/// Fills the value statistics of `d` from the kept values of its entry in both runs.
void add_value_differences(const std::vector<float>& a, const std::vector<float>& b,
                           FirstDifference& d);

/// The result as JSON: {"first_difference": null | {...}, "spread": [...], ...}.
nlohmann::json audit_json(const AuditResult& r, const nlohmann::json& runs);
/// A compact table on `out`.
void print_audit(std::FILE* out, const AuditResult& r, const std::string& a_name,
                 const std::string& b_name);

}  // namespace dt
