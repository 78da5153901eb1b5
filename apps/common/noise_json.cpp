// SPDX-License-Identifier: MIT
// result.json's "noise" block (docs/formats.md) and the banner lines of a NoiseConfig (contract
// in noise_flags.h).
#include <nlohmann/json.hpp>

#include "apps/common/noise_flags.h"
#include "engine/core/error.h"

namespace dt {

namespace {

using Json = nlohmann::ordered_json;

Json source_json(const SourceSetting& s) {
    Json j;
    j["kind"] = source_kind_name(s.kind);
    if (!s.is_off()) j["seed"] = s.resolved() ? Json(s.seed) : Json(nullptr);
    return j;
}

[[noreturn]] void malformed(const std::string& where, const std::string& what) {
    throw ValueError(str("noise block: ", where, ": ", what,
                         " (expected the \"noise\" object of a detrain result.json, "
                         "see docs/formats.md)"));
}

const nlohmann::json& member(const nlohmann::json& j, const std::string& where, const char* key) {
    if (!j.is_object() || !j.contains(key)) malformed(where, str("missing key \"", key, "\""));
    return j.at(key);
}

uint64_t seed_of(const nlohmann::json& j, const std::string& where) {
    const nlohmann::json& s = member(j, where, "seed");
    if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<int64_t>() >= 0)) {
        malformed(where, str("\"seed\" is ", s.dump(), ", expected an integer in [0, 2^64)"));
    }
    return s.get<uint64_t>();
}

// A recorded source: random seeds count as drawn, so a replay reuses them.
SourceSetting source_from_json(const nlohmann::json& j, const std::string& where,
                               bool allow_off) {
    const nlohmann::json& kind = member(j, where, "kind");
    const std::string k = kind.is_string() ? kind.get<std::string>() : kind.dump();
    if (k == "off" && allow_off) return SourceSetting::off();
    if (k == "fixed") return SourceSetting::fixed(seed_of(j, where));
    if (k == "random") return SourceSetting{SourceKind::kRandom, seed_of(j, where), true};
    malformed(where, str("\"kind\" is ", kind.dump(), ", expected fixed, random",
                         allow_off ? " or off" : ""));
}

}  // namespace

nlohmann::ordered_json to_json(const NoiseConfig& c) {
    Json j;
    j["preset"] = c.preset.empty() ? Json(nullptr) : Json(c.preset);
    j["sources"] = Json{{"init", source_json(c.init)},
                        {"shuffle", source_json(c.shuffle)},
                        {"augment", source_json(c.augment)},
                        {"dropout", source_json(c.dropout)}};
    if (c.init_perturb) {
        j["init_perturb"] = Json{{"param", c.init_perturb->param},
                                 {"index", c.init_perturb->index},
                                 {"direction", c.init_perturb->direction > 0 ? "up" : "down"}};
    } else {
        j["init_perturb"] = nullptr;
    }
    j["impl"] = c.impl;
    Json sites = Json::object();
    for (ReduceSite site : all_reduce_sites()) {
        const SiteSetting& s = c.sites[static_cast<std::size_t>(site)];
        Json e{{"mode", accum_mode_name(s.mode)}};
        if (s.mode == AccumMode::kPermuted) {
            e["kind"] = source_kind_name(s.permute.kind);
            e["seed"] = s.permute.resolved() ? Json(s.permute.seed) : Json(nullptr);
        }
        sites[reduce_site_name(site)] = e;
    }
    j["sites"] = sites;
    j["shuffle_within_batch"] = source_json(c.shuffle_within_batch);
    return j;
}

NoiseConfig noise_config_from_json(const nlohmann::json& j) {
    NoiseConfig c;
    const nlohmann::json& preset = member(j, "noise", "preset");
    c.preset = preset.is_string() ? preset.get<std::string>() : "";
    const nlohmann::json& src = member(j, "noise", "sources");
    c.init = source_from_json(member(src, "sources", "init"), "sources.init", false);
    c.shuffle = source_from_json(member(src, "sources", "shuffle"), "sources.shuffle", true);
    c.augment = source_from_json(member(src, "sources", "augment"), "sources.augment", true);
    c.dropout = source_from_json(member(src, "sources", "dropout"), "sources.dropout", true);
    const nlohmann::json& ip = member(j, "noise", "init_perturb");
    if (!ip.is_null()) {
        InitPerturb p;
        try {
            p.param = ip.at("param").get<std::string>();
            p.index = ip.at("index").get<int64_t>();
            const std::string dir = ip.at("direction").get<std::string>();
            if (dir != "up" && dir != "down") malformed("init_perturb", "direction " + dir);
            p.direction = dir == "up" ? +1 : -1;
        } catch (const nlohmann::json::exception& e) {
            malformed("init_perturb", e.what());
        }
        c.init_perturb = p;
    }
    const nlohmann::json& impl = member(j, "noise", "impl");
    c.impl = impl.is_string() ? impl.get<std::string>() : "";
    const nlohmann::json& sites = member(j, "noise", "sites");
    for (ReduceSite site : all_reduce_sites()) {
        const std::string where = str("sites.", reduce_site_name(site));
        const nlohmann::json& e = member(sites, "sites", reduce_site_name(site));
        const nlohmann::json& mode = member(e, where, "mode");
        const std::optional<AccumMode> m =
            accum_mode_from_name(mode.is_string() ? mode.get<std::string>() : "");
        if (!m) malformed(where, str("\"mode\" is ", mode.dump(), ", expected one of tree, "
                                     "atomic, kahan, exact, permuted"));
        SiteSetting& s = c.sites[static_cast<std::size_t>(site)];
        s.mode = *m;
        if (*m == AccumMode::kPermuted) s.permute = source_from_json(e, where, false);
    }
    c.shuffle_within_batch = source_from_json(member(j, "noise", "shuffle_within_batch"),
                                              "shuffle_within_batch", true);
    return c;
}

std::vector<std::string> describe_noise(const NoiseConfig& c) {
    std::vector<std::string> lines;
    if (!c.preset.empty()) lines.push_back("preset          " + c.preset);
    lines.push_back(str("init            ", source_setting_text(c.init),
                        c.init_perturb ? ", perturb " + init_perturb_text(*c.init_perturb) : ""));
    lines.push_back("shuffle         " + source_setting_text(c.shuffle));
    lines.push_back("augment         " + source_setting_text(c.augment));
    lines.push_back("dropout         " + source_setting_text(c.dropout));
    lines.push_back("in-batch order  " + (c.shuffle_within_batch.is_off()
                                              ? std::string("off (loader order)")
                                              : source_setting_text(c.shuffle_within_batch)));
    lines.push_back("impl            " + c.impl);
    std::string row;  // three sites per line
    for (ReduceSite site : all_reduce_sites()) {
        row += str(row.empty() ? "" : "  ", reduce_site_name(site), "=",
                   site_setting_text(c.sites[static_cast<std::size_t>(site)]));
        const int k = static_cast<int>(site) + 1;
        if (k % 3 == 0 || k == kNumReduceSites) {
            lines.push_back((k <= 3 ? "sites           " : "                ") + row);
            row.clear();
        }
    }
    return lines;
}

}  // namespace dt
