// SPDX-License-Identifier: MIT
// The noise switchboard (issue 3; user guide docs/noise.md): one switch per source of training
// noise.
//   algorithmic sources  init, shuffle, augment, dropout: fixed:<seed> | random | off (not init)
//   init-perturb         one initial weight moved to the adjacent float32 (Summers & Dinneen 2021)
//   implementation       one AccumSpec per reduce site (--impl preset, --impl-site overrides)
//   within-batch order   --shuffle-within-batch: samples permuted inside every batch (the order:
//                        within_batch_permutation, datasets/sampler.h)
// `random` draws a 64-bit seed from OS entropy once, in resolve_noise_config at the start of a
// run; from then on the source behaves as fixed and the drawn seed is recorded (to_json), so a
// replay (from_json) reproduces it. Parse errors throw dt::ValueError naming the flag, the value
// and the valid values.
//
// Precedence of the flags (noise_config_from_flags), by specificity, not by position on the
// command line (repeating one flag: the last one wins; --impl-site lists accumulate in order):
//   --noise preset  <  --seed  <  --seed-<source> / --no-shuffle
//   --noise preset  <  --impl  <  --impl-site (later entries win over earlier ones)
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/noise/reduce_sites.h"

namespace dt {

enum class SourceKind : uint8_t { kFixed, kRandom, kOff };
const char* source_kind_name(SourceKind kind);  // "fixed" | "random" | "off"

/// One seeded source. kFixed: `seed` as given. kRandom: `seed` is valid once `drawn` (by
/// resolve_noise_config, or loaded from a record). kOff: the source is switched off.
struct SourceSetting {
    SourceKind kind = SourceKind::kFixed;
    uint64_t seed = 0;
    bool drawn = false;

    static SourceSetting fixed(uint64_t seed) { return {SourceKind::kFixed, seed, false}; }
    static SourceSetting random() { return {SourceKind::kRandom, 0, false}; }
    static SourceSetting off() { return {SourceKind::kOff, 0, false}; }
    bool is_off() const { return kind == SourceKind::kOff; }
    /// True when `seed` can be used: fixed, or random and drawn.
    bool resolved() const {
        return kind == SourceKind::kFixed || (kind == SourceKind::kRandom && drawn);
    }
    bool operator==(const SourceSetting&) const = default;
};

/// "N" | "fixed:N" (N decimal in [0, 2^64)) | "random" | "off" (only when allow_off).
/// Throws ValueError "<flag>: got 'X', expected ...".
SourceSetting parse_source_setting(const std::string& flag, const std::string& text,
                                   bool allow_off = true);
/// "fixed:7", "random:1234" (drawn) / "random" (not yet drawn), "off".
std::string source_setting_text(const SourceSetting& s);

/// --init-perturb NAME:INDEX[:up|down]: after init, element INDEX (row-major) of the trainable
/// tensor NAME moves to the adjacent float32 toward +inf (up, default) or -inf (down).
struct InitPerturb {
    std::string param;
    int64_t index = 0;
    int direction = +1;  // +1 up, -1 down
    bool operator==(const InitPerturb&) const = default;
};
InitPerturb parse_init_perturb(const std::string& text);  // flag --init-perturb
std::string init_perturb_text(const InitPerturb& p);      // "conv1.weight:0:up"

/// Applies `p` to the tensor of `names[i] == p.param` in `tensors` (float32, same length as
/// names). Returns {before, after}. Throws ValueError listing the valid names, or the tensor's
/// size for an index out of range.
std::pair<float, float> apply_init_perturb(const InitPerturb& p,
                                           const std::vector<std::string>& names,
                                           const std::vector<Tensor>& tensors);

/// The implementation setting of one reduce site: a mode, and for kPermuted its run seed.
struct SiteSetting {
    AccumMode mode = AccumMode::kTree;
    SourceSetting permute = SourceSetting::off();  // kPermuted only: fixed or random
    bool operator==(const SiteSetting&) const = default;
};
using SiteSettings = std::array<SiteSetting, kNumReduceSites>;

/// A mode as typed in --impl-site: tree | atomic | kahan | exact | permuted:<seed> |
/// permuted:random. Throws ValueError naming `flag` and the valid modes.
SiteSetting parse_site_setting(const std::string& flag, const std::string& text);
std::string site_setting_text(const SiteSetting& s);  // "tree", "permuted:7", "permuted:random"

/// --impl: "deterministic" (tree at every site; the default), "fast" (atomic at the sites where
/// reduce_site_atomic_in_fast, tree elsewhere), "exact" (exact at the cross-sample sites, which
/// makes a step invariant to the order of samples; tree at the within-sample sites, whose fixed
/// order already makes them independent of threads and batch order), "exact-all" (exact at every
/// site), or any other mode of parse_site_setting at every site ("kahan", "atomic",
/// "permuted:7", ...). Throws ValueError listing the valid values.
SiteSettings impl_preset(const std::string& text);
/// Applies "site=mode[,site=mode...]" (--impl-site) to `sites`, left to right.
void apply_impl_sites(SiteSettings& sites, const std::string& list);

/// The whole resolved noise configuration of a run.
struct NoiseConfig {
    std::string preset;                  // --noise: control | algo | impl | algo+impl | "" (none)
    std::string impl = "deterministic";  // the --impl preset the sites started from
    SourceSetting init, shuffle, augment, dropout;  // default fixed:0
    std::optional<InitPerturb> init_perturb;
    SiteSettings sites{};  // default tree everywhere
    SourceSetting shuffle_within_batch = SourceSetting::off();
    bool operator==(const NoiseConfig&) const = default;
};

/// --noise presets, in order: control, algo, impl, algo+impl.
const std::vector<std::string>& noise_preset_names();

/// The noise flags as typed ("" = not given).
struct NoiseFlags {
    std::string noise, seed, seed_init, seed_shuffle, seed_augment, seed_dropout;
    bool no_shuffle = false;
    std::string init_perturb, impl, shuffle_within_batch;
    std::vector<std::string> impl_site;  // every --impl-site, in command-line order
};

/// Builds the configuration from the flags by the precedence in the file header. Random seeds
/// are not drawn yet (resolve_noise_config). Throws ValueError naming the flag.
NoiseConfig noise_config_from_flags(const NoiseFlags& flags);

/// 64 bits of OS entropy: two 32-bit draws of std::random_device (high word first).
uint64_t os_entropy64();
using EntropyFn = std::function<uint64_t()>;
/// Draws a seed for every `random` setting not drawn yet (sources, permuted sites,
/// shuffle-within-batch), in a fixed order; afterwards every setting is resolved.
void resolve_noise_config(NoiseConfig& cfg, const EntropyFn& entropy = os_entropy64);
/// True when no `random` setting awaits its draw.
bool noise_config_resolved(const NoiseConfig& cfg);

/// The specs to install in the reduce-site registry (kPermuted: permute_key = the run seed).
/// The configuration must be resolved.
ReduceSiteSpecs reduce_site_specs(const NoiseConfig& cfg);

/// result.json's "noise" block (docs/formats.md) and back. from_json marks random seeds drawn,
/// so a replay never draws again; it throws ValueError for a malformed block.
nlohmann::ordered_json to_json(const NoiseConfig& cfg);
NoiseConfig noise_config_from_json(const nlohmann::json& j);

/// Human-readable lines for the start banner ("init      fixed:0", ...).
std::vector<std::string> describe_noise(const NoiseConfig& cfg);

}  // namespace dt
