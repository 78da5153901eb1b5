// SPDX-License-Identifier: MIT
// Rank agreement (contract in rank_agreement.h).
#include "apps/train/rank_agreement.h"

#include <cstdio>
#include <vector>

#include "apps/common/version.h"
#include "engine/core/error.h"
#include "engine/noise/noise_config.h"
#include "engine/runtime/collective.h"

namespace dt {

namespace {

/// FNV-1a over bytes, continued from h.
uint64_t fnv1a(uint64_t h, const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

nlohmann::ordered_json describe(const Dataset& d) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, d.pixels.data(), d.pixels.size());
    h = fnv1a(h, d.labels.data(), d.labels.size() * sizeof(int32_t));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return {{"size", d.size},
            {"shape", {d.channels, d.height, d.width}},
            {"classes", d.num_classes},
            {"hash", hex}};
}

/// The first key (depth first) where a and b differ, as "key: a vs b".
std::string first_difference(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                             const std::string& at) {
    if (a.is_object() && b.is_object()) {
        for (const auto& [k, v] : a.items()) {
            const std::string key = at.empty() ? k : at + "." + k;
            if (!b.contains(k)) return key + ": " + v.dump() + " vs (absent)";
            if (v != b.at(k)) return first_difference(v, b.at(k), key);
        }
        for (const auto& [k, v] : b.items())
            if (!a.contains(k))
                return (at.empty() ? k : at + "." + k) + ": (absent) vs " + v.dump();
    }
    return at + ": " + a.dump() + " vs " + b.dump();
}

}  // namespace

uint64_t rank0_entropy() {
    Collective& w = world();
    uint64_t v = w.rank() == 0 ? os_entropy64() : 0;
    w.broadcast(&v, sizeof v, 0);
    return v;
}

void check_same_on_every_rank(const std::string& what, const nlohmann::ordered_json& mine) {
    Collective& w = world();
    if (w.size() == 1) return;
    std::string text = mine.dump();
    uint64_t n = text.size();
    w.broadcast(&n, sizeof n, 0);
    std::string root(static_cast<std::size_t>(n), '\0');
    if (w.rank() == 0) root = text;
    w.broadcast(root.data(), root.size(), 0);
    if (root == text) return;
    const nlohmann::ordered_json theirs = nlohmann::ordered_json::parse(root);
    w.abort(str(what, " differs from rank 0's: ", first_difference(mine, theirs, ""),
                " (this rank vs rank 0; every process needs the same detrain build, flags and "
                "data: docs/distributed.md)"));
}

nlohmann::ordered_json run_fingerprint(const TrainConfig& cfg) {
    nlohmann::ordered_json flags = to_json(cfg);
    for (const char* per_host : {"threads", "isa", "data-dir", "progress", "out"})
        flags.erase(per_host);
    return {{"detrain", version_string()}, {"recipe", kRecipeVersion}, {"flags", flags}};
}

nlohmann::ordered_json data_fingerprint(const Dataset& train, const Dataset& test) {
    return {{"train", describe(train)}, {"test", describe(test)}};
}

}  // namespace dt
