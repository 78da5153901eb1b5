// SPDX-License-Identifier: MIT
// The command-line vocabulary of the noise switchboard (user guide docs/noise.md; the switchboard
// itself is engine/noise/noise_config.h): the flags as typed, their parsing and precedence, the
// text forms of settings, the "noise" block of result.json and the start banner's lines. Parse
// errors throw dt::ValueError naming the flag, the value and the valid values.
//
// Precedence of the flags (noise_config_from_flags), by specificity, not by position on the
// command line (repeating one flag: the last one wins; --impl-site lists accumulate in order):
//   --noise preset  <  --seed  <  --seed-<source> / --no-shuffle
//   --noise preset  <  --impl  <  --impl-site (later entries win over earlier ones)
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/noise/noise_config.h"

namespace dt {

/// The noise flags as typed ("" = not given).
struct NoiseFlags {
    std::string noise, seed, seed_init, seed_shuffle, seed_augment, seed_dropout;
    bool no_shuffle = false;
    std::string init_perturb, impl, shuffle_within_batch;
    std::vector<std::string> impl_site;  // every --impl-site, in command-line order
};

/// The noise flags, as typed on the command line (what NoiseFlags holds), in flag order.
const std::vector<std::string>& noise_flag_names();

/// "N" | "fixed:N" (N decimal in [0, 2^64)) | "random" | "off" (only when allow_off).
/// Throws ValueError "<flag>: got 'X', expected ...".
SourceSetting parse_source_setting(const std::string& flag, const std::string& text,
                                   bool allow_off = true);
/// "fixed:7", "random:1234" (drawn) / "random" (not yet drawn), "off".
std::string source_setting_text(const SourceSetting& s);

/// --init-perturb NAME:INDEX[:up|down] (direction up by default).
InitPerturb parse_init_perturb(const std::string& text);
std::string init_perturb_text(const InitPerturb& p);  // "conv1.weight:0:up"

/// A mode as typed in --impl-site: tree | atomic | kahan | exact | permuted:<seed> |
/// permuted:random. Throws ValueError naming `flag` and the valid modes.
SiteSetting parse_site_setting(const std::string& flag, const std::string& text);
std::string site_setting_text(const SiteSetting& s);  // "tree", "permuted:7", "permuted:random"

/// --impl: an implementation preset (impl_preset_names()) or one mode of parse_site_setting at
/// every site ("kahan", "atomic", "permuted:7", ...). Throws ValueError listing the valid values.
SiteSettings impl_sites(const std::string& text);
/// Applies "site=mode[,site=mode...]" (--impl-site) to `sites`, left to right.
void apply_impl_sites(SiteSettings& sites, const std::string& list);

/// Builds the configuration from the flags by the precedence in the file header. Random seeds
/// are not drawn yet (resolve_noise_config). Throws ValueError naming the flag.
NoiseConfig noise_config_from_flags(const NoiseFlags& flags);

/// result.json's "noise" block (docs/formats.md) and back (apps/common/noise_json.cpp).
/// from_json marks random seeds drawn, so a replay never draws again; it throws ValueError for a
/// malformed block.
nlohmann::ordered_json to_json(const NoiseConfig& cfg);
NoiseConfig noise_config_from_json(const nlohmann::json& j);

/// Human-readable lines for the start banner ("init      fixed:0", ...).
std::vector<std::string> describe_noise(const NoiseConfig& cfg);

}  // namespace dt
