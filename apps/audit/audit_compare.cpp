// SPDX-License-Identifier: MIT
// Trail comparison (contract in audit_compare.h).
#include "apps/audit/audit_compare.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "apps/audit/trace_file.h"
#include "engine/core/nan_bits.h"
#include "engine/core/shape.h"

namespace dt {

namespace {

constexpr std::size_t kOpsShown = 6;

bool same_kind(const TraceEntry& a, const TraceEntry& b) {
    return a.phase == b.phase && a.op == b.op && a.tensor == b.tensor && a.shape == b.shape;
}

std::string describe(const TraceEntry& e) { return e.op + " " + e.tensor; }

nlohmann::json entry_json(const TraceEntry& e) { return nlohmann::json::parse(trace_line(e)); }

}  // namespace

AuditResult compare_trails(const std::vector<TraceEntry>& a, const std::vector<TraceEntry>& b) {
    AuditResult r;
    r.entries_a = static_cast<int64_t>(a.size()), r.entries_b = static_cast<int64_t>(b.size());
    // Steps in both trails are compared (a trail written from a resume point holds only its
    // later steps); the others are counted.
    std::set<int64_t> steps_a, steps_b;
    for (const TraceEntry& e : a) steps_a.insert(e.step);
    for (const TraceEntry& e : b) steps_b.insert(e.step);
    std::set<int64_t> common;
    for (int64_t s : steps_a)
        if (steps_b.count(s)) common.insert(s);
    r.steps = static_cast<int64_t>(common.size());
    r.steps_only_a = static_cast<int64_t>(steps_a.size() - common.size());
    r.steps_only_b = static_cast<int64_t>(steps_b.size() - common.size());
    const int64_t last_step = common.empty() ? -1 : *common.rbegin();
    std::map<std::pair<int64_t, int64_t>, const TraceEntry*> in_a, in_b;
    for (const TraceEntry& e : a) in_a[{e.step, e.index}] = &e;
    for (const TraceEntry& e : b) in_b[{e.step, e.index}] = &e;
    std::map<int64_t, StepSpread> steps;
    for (const TraceEntry& e : a) {
        if (!common.count(e.step)) continue;
        const auto it = in_b.find({e.step, e.index});
        const TraceEntry* o = it == in_b.end() ? nullptr : it->second;
        const bool differs = o == nullptr || !same_kind(e, *o) || e.hash != o->hash;
        StepSpread& s = steps[e.step];
        s.step = e.step;
        ++s.total;
        if (!differs) continue;
        ++s.differing;
        if (s.first_ops.size() < kOpsShown) s.first_ops.push_back(describe(e));
        if (!r.first) {
            FirstDifference d;
            d.a = e;
            d.b = o != nullptr ? *o : TraceEntry{};
            d.structural = o == nullptr || !same_kind(e, *o);
            r.first = d;
        }
    }
    for (auto& [step, s] : steps)
        if (r.first && step >= r.first->a.step) r.spread.push_back(s);
    if (!r.first) {  // B has entries A lacks, in a compared step
        for (const TraceEntry& e : b) {
            if (!common.count(e.step) || in_a.count({e.step, e.index})) continue;
            FirstDifference d;
            d.b = e;
            d.structural = true;
            r.first = d;
            break;
        }
    }
    for (const TraceEntry& e : a) {  // the weights after the last compared step
        if (e.step != last_step || e.phase != "update") continue;
        ++r.weights_total;
        const auto it = in_b.find({e.step, e.index});
        if (it == in_b.end() || it->second->hash != e.hash) ++r.weights_differing;
    }
    return r;
}

void add_value_differences(const std::vector<float>& a, const std::vector<float>& b,
                           FirstDifference& d) {
    if (a.size() != b.size() || a.empty()) return;
    d.values_known = true;
    d.elements = static_cast<int64_t>(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (same_bits(a[i], b[i])) continue;  // (every NaN one value: nan_bits.h)
        ++d.differing;
        d.max_ulp = std::max(d.max_ulp, ulp_distance(a[i], b[i]));
        const double scale = std::max(std::fabs(double{a[i]}), std::fabs(double{b[i]}));
        const double rel = scale > 0 ? std::fabs(double{a[i]} - double{b[i]}) / scale : 0.0;
        d.max_relative = std::max(d.max_relative, std::isnan(rel) ? INFINITY : rel);
    }
}

nlohmann::json audit_json(const AuditResult& r, const nlohmann::json& runs) {
    nlohmann::json j;
    j["runs"] = runs;
    j["steps"] = r.steps;  // compared: in both trails
    j["steps_only_in"] = {{"a", r.steps_only_a}, {"b", r.steps_only_b}};
    j["entries"] = {{"a", r.entries_a}, {"b", r.entries_b}};
    j["identical"] = !r.first.has_value();
    if (!r.first) {
        j["first_difference"] = nullptr;
    } else {
        const FirstDifference& d = *r.first;
        nlohmann::json f = {{"step", d.a.step},
                            {"index", d.a.index},
                            {"phase", d.a.phase},
                            {"op", d.a.op},
                            {"tensor", d.a.tensor},
                            {"shape", d.a.shape},
                            {"structural", d.structural},
                            {"a", entry_json(d.a)},
                            {"b", d.b.phase.empty() ? nlohmann::json(nullptr) : entry_json(d.b)}};
        if (d.values_known) {
            f["elements"] = d.elements;
            f["differing_elements"] = d.differing;
            f["max_ulp"] =
                std::isinf(d.max_ulp) ? nlohmann::json("inf") : nlohmann::json(d.max_ulp);
            f["max_relative_difference"] =
                std::isinf(d.max_relative) ? nlohmann::json("inf") : nlohmann::json(d.max_relative);
        }
        j["first_difference"] = f;
    }
    nlohmann::json spread = nlohmann::json::array();
    for (const StepSpread& s : r.spread)
        spread.push_back({{"step", s.step},
                          {"differing_entries", s.differing},
                          {"entries", s.total},
                          {"first_differing", s.first_ops}});
    j["spread"] = spread;
    j["final_weights"] = {{"differing_tensors", r.weights_differing}, {"tensors", r.weights_total}};
    return j;
}

void print_audit(std::FILE* out, const AuditResult& r, const std::string& a_name,
                 const std::string& b_name) {
    std::fprintf(out, "run A  %s\nrun B  %s\n", a_name.c_str(), b_name.c_str());
    std::fprintf(out, "trail  %lld entries (A), %lld (B) over %lld steps\n",
                 static_cast<long long>(r.entries_a), static_cast<long long>(r.entries_b),
                 static_cast<long long>(r.steps));
    if (r.steps_only_a + r.steps_only_b > 0)
        std::fprintf(out, "       not compared: %lld steps only in A, %lld only in B\n",
                     static_cast<long long>(r.steps_only_a),
                     static_cast<long long>(r.steps_only_b));
    if (!r.first) {
        std::fprintf(out, "result bitwise identical: every op output, gradient and weight\n");
        return;
    }
    const FirstDifference& d = *r.first;
    std::fprintf(
        out, "first difference  step %lld, entry %lld: %s %s (%s, %s)%s\n",
        static_cast<long long>(d.a.step), static_cast<long long>(d.a.index), d.a.op.c_str(),
        d.a.tensor.c_str(), d.a.phase.c_str(), shape_str(d.a.shape).c_str(),
        d.structural ? str("\n                  B has ",
                           d.b.op.empty() ? "no entry" : describe(d.b) + " " + shape_str(d.b.shape),
                           " there (the runs do different work)")
                           .c_str()
                     : "");
    if (d.values_known) {
        std::fprintf(
            out,
            "                  %lld of %lld elements differ, max %.4g ULP, max relative %.3g\n",
            static_cast<long long>(d.differing), static_cast<long long>(d.elements), d.max_ulp,
            d.max_relative);
    }
    std::fprintf(out, "spread            %-6s %-17s %s\n", "step", "entries differing",
                 "first differing entries");
    for (const StepSpread& s : r.spread) {
        std::string ops;
        for (const std::string& o : s.first_ops) ops += (ops.empty() ? "" : ", ") + o;
        std::fprintf(out, "                  %-6lld %6lld of %-7lld %s\n",
                     static_cast<long long>(s.step), static_cast<long long>(s.differing),
                     static_cast<long long>(s.total), ops.c_str());
    }
    std::fprintf(out, "final weights     %lld of %lld tensors differ\n",
                 static_cast<long long>(r.weights_differing),
                 static_cast<long long>(r.weights_total));
}

}  // namespace dt
