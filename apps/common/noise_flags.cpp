// SPDX-License-Identifier: MIT
// Parsing and precedence of the noise flags (contract in noise_flags.h). Error messages are for
// people typing flags: "--seed-init: got 'x', expected N, fixed:N or random".
#include "apps/common/noise_flags.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

namespace {

/// A plain decimal in [0, 2^64), or nullopt (no sign, no wrap-around, no saturation).
std::optional<uint64_t> parse_u64(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return {};
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return {};
    return static_cast<uint64_t>(v);
}

[[noreturn]] void reject(const std::string& flag, const std::string& text,
                         const std::string& expected) {
    throw ValueError(str(flag, ": got '", text, "', expected ", expected));
}

const char* kSeedForms = "N, fixed:N, random or off (N an integer in [0, 2^64))";
const char* kInitOffHint =
    "N, fixed:N or random (the weight init cannot be switched off: every weight needs an initial "
    "value; a fixed seed removes init noise)";

std::string site_modes_text() {
    std::string modes;
    for (AccumMode m : kernels::common::kAccumModes) {
        if (m != AccumMode::kPermuted) modes += str(accum_mode_name(m), ", ");
    }
    return modes + "permuted:<seed>, permuted:random";
}

}  // namespace

const std::vector<std::string>& noise_flag_names() {
    static const std::vector<std::string> v = {
        "--noise",        "--seed",         "--seed-init",  "--seed-shuffle", "--seed-augment",
        "--seed-dropout", "--no-shuffle",   "--init-perturb", "--impl",       "--impl-site",
        "--shuffle-within-batch"};
    return v;
}

// ---- seeded sources ----

SourceSetting parse_source_setting(const std::string& flag, const std::string& text,
                                   bool allow_off) {
    if (text == "random") return SourceSetting::random();
    if (text == "off") {
        if (!allow_off) reject(flag, text, kInitOffHint);
        return SourceSetting::off();
    }
    const std::string digits = text.rfind("fixed:", 0) == 0 ? text.substr(6) : text;
    if (const auto v = parse_u64(digits)) return SourceSetting::fixed(*v);
    reject(flag, text, allow_off ? kSeedForms : "N, fixed:N or random (N an integer in [0, 2^64))");
}

std::string source_setting_text(const SourceSetting& s) {
    switch (s.kind) {
        case SourceKind::kFixed: return str("fixed:", s.seed);
        case SourceKind::kRandom: return s.drawn ? str("random:", s.seed) : "random";
        case SourceKind::kOff: return "off";
    }
    return "?";
}

// ---- init perturbation ----

InitPerturb parse_init_perturb(const std::string& text) {
    const char* expected = "NAME:INDEX[:up|down] (e.g. conv1.weight:0:up)";
    const std::vector<std::string> parts = split_text(text, ':');
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) {
        reject("--init-perturb", text, expected);
    }
    InitPerturb p;
    p.param = parts[0];
    const auto index = parse_u64(parts[1]);
    if (!index || *index > static_cast<uint64_t>(INT64_MAX)) {
        reject("--init-perturb", text, str(expected, "; INDEX an integer >= 0"));
    }
    p.index = static_cast<int64_t>(*index);
    if (parts.size() == 3) {
        if (parts[2] == "up") {
            p.direction = +1;
        } else if (parts[2] == "down") {
            p.direction = -1;
        } else {
            reject("--init-perturb", text, str(expected, "; the direction is up or down"));
        }
    }
    return p;
}

std::string init_perturb_text(const InitPerturb& p) {
    return str(p.param, ":", p.index, p.direction > 0 ? ":up" : ":down");
}

// ---- implementation sites ----

SiteSetting parse_site_setting(const std::string& flag, const std::string& text) {
    SiteSetting s;
    if (text.rfind("permuted:", 0) == 0) {
        const std::string seed = text.substr(9);
        s.mode = AccumMode::kPermuted;
        if (seed == "random") {
            s.permute = SourceSetting::random();
        } else if (const auto v = parse_u64(seed)) {
            s.permute = SourceSetting::fixed(*v);
        } else {
            reject(flag, text, "permuted:<seed> (an integer in [0, 2^64)) or permuted:random");
        }
        return s;
    }
    const std::optional<AccumMode> mode = accum_mode_from_name(text);
    if (!mode || *mode == AccumMode::kPermuted) {
        reject(flag, text, "one of " + site_modes_text());
    }
    s.mode = *mode;
    return s;
}

std::string site_setting_text(const SiteSetting& s) {
    if (s.mode != AccumMode::kPermuted) return accum_mode_name(s.mode);
    switch (s.permute.kind) {
        case SourceKind::kFixed: return str("permuted:", s.permute.seed);
        case SourceKind::kRandom:
            return s.permute.drawn ? str("permuted:random:", s.permute.seed) : "permuted:random";
        case SourceKind::kOff: break;
    }
    return "permuted:?";
}

SiteSettings impl_sites(const std::string& text) {
    if (const std::optional<SiteSettings> preset = impl_preset(text)) return *preset;
    SiteSettings sites{};
    try {
        sites.fill(parse_site_setting("--impl", text));
    } catch (const ValueError&) {
        reject("--impl", text,
               join_text(impl_preset_names()) + ", or one mode for every site: " +
                   site_modes_text());
    }
    return sites;
}

void apply_impl_sites(SiteSettings& sites, const std::string& list) {
    for (const std::string& entry : split_text(list, ',')) {
        const std::size_t eq = entry.find('=');
        if (eq == std::string::npos) {
            reject("--impl-site", entry,
                   "SITE=MODE[,SITE=MODE...] (e.g. conv.wgrad=atomic,loss=permuted:7)");
        }
        const std::string name = entry.substr(0, eq);
        const std::optional<ReduceSite> site = reduce_site_from_name(name);
        if (!site) {
            throw ValueError(str("--impl-site: unknown site '", name, "' in '", entry,
                                 "', expected one of ", join_text(reduce_site_names())));
        }
        sites[static_cast<std::size_t>(*site)] =
            parse_site_setting(str("--impl-site ", name), entry.substr(eq + 1));
    }
}

// ---- precedence ----

NoiseConfig noise_config_from_flags(const NoiseFlags& f) {
    NoiseConfig c;
    // 1. --noise: the base for seeds and implementation.
    if (!f.noise.empty()) {
        const std::optional<NoisePreset> preset = noise_preset(f.noise);
        if (!preset) reject("--noise", f.noise, "one of " + join_text(noise_preset_names()));
        c.preset = f.noise;
        c.init = c.shuffle = c.augment = c.dropout = preset->seeds;
        c.impl = preset->impl;
    }
    // 2. --seed sets all four sources.
    if (!f.seed.empty()) {
        const SourceSetting s = parse_source_setting("--seed", f.seed, /*allow_off=*/true);
        if (s.is_off()) {
            reject("--seed", f.seed,
                   "N, fixed:N or random (--seed sets all four sources and the weight init "
                   "cannot be off; switch the others off one by one: --seed-shuffle off, "
                   "--seed-augment off, --seed-dropout off)");
        }
        c.init = c.shuffle = c.augment = c.dropout = s;
    }
    // 3. One source each.
    if (!f.seed_init.empty()) c.init = parse_source_setting("--seed-init", f.seed_init, false);
    if (!f.seed_shuffle.empty()) c.shuffle = parse_source_setting("--seed-shuffle", f.seed_shuffle);
    if (!f.seed_augment.empty()) c.augment = parse_source_setting("--seed-augment", f.seed_augment);
    if (!f.seed_dropout.empty()) c.dropout = parse_source_setting("--seed-dropout", f.seed_dropout);
    if (f.no_shuffle) {
        if (!f.seed_shuffle.empty() && !c.shuffle.is_off()) {
            throw ValueError(str("--no-shuffle: contradicts --seed-shuffle ", f.seed_shuffle,
                                 " (--no-shuffle means --seed-shuffle off; give one of them)"));
        }
        c.shuffle = SourceSetting::off();
    }
    // 4. Implementation: the --impl preset (or the --noise one), then --impl-site overrides.
    if (!f.impl.empty()) c.impl = f.impl;
    c.sites = impl_sites(c.impl);
    for (const std::string& list : f.impl_site) apply_impl_sites(c.sites, list);
    // 5. The rest.
    if (!f.shuffle_within_batch.empty()) {
        c.shuffle_within_batch =
            parse_source_setting("--shuffle-within-batch", f.shuffle_within_batch);
    }
    if (!f.init_perturb.empty()) c.init_perturb = parse_init_perturb(f.init_perturb);
    return c;
}

}  // namespace dt
