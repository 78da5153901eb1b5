// SPDX-License-Identifier: MIT
// The noise switchboard (issue 3; user guide docs/noise.md): one switch per source of training
// noise, as the engine sees it. The flags that set it, their text forms and the JSON of the noise
// block are the apps' vocabulary (apps/common/noise_flags.h).
//   algorithmic sources  init, shuffle, augment, dropout: fixed:<seed> | random | off (not init)
//   init-perturb         one initial weight moved to the adjacent float32 (Summers & Dinneen 2021)
//   implementation       one setting per reduce site; presets set them all at once
//   within-batch order   samples permuted inside every batch (the order: within_batch_permutation,
//                        datasets/sampler.h)
// `random` draws a 64-bit seed from OS entropy once, in resolve_noise_config at the start of a
// run; from then on the source behaves as fixed and the drawn seed is recorded, so a replay
// reproduces it.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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

/// The one-bit perturbation of an initial weight: element `index` (row-major) of the trainable
/// tensor `param` moves to the adjacent float32 toward +inf (direction +1) or -inf (-1).
struct InitPerturb {
    std::string param;
    int64_t index = 0;
    int direction = +1;  // +1 up, -1 down
    bool operator==(const InitPerturb&) const = default;
};

/// Applies `p` to the tensor of `names[i] == p.param` in `tensors` (float32 tensors on any device,
/// same length as names). Returns {before, after}. Throws ValueError listing the valid names, or
/// the tensor's size for an index out of range.
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

/// The implementation presets: "deterministic" (tree at every site), "fast" (atomic at the sites
/// where reduce_site_atomic_in_fast, tree elsewhere), "exact" (exact at the cross-sample sites,
/// which makes a step invariant to the order of samples; tree at the within-sample sites, whose
/// fixed order already makes them independent of threads and batch order), "exact-all" (exact at
/// every site). nullopt for another name.
std::optional<SiteSettings> impl_preset(std::string_view name);
const std::vector<std::string>& impl_preset_names();  // in that order

/// The whole resolved noise configuration of a run.
struct NoiseConfig {
    std::string preset;                  // the noise preset, or "" (none)
    std::string impl = "deterministic";  // the implementation preset (or mode) the sites began as
    SourceSetting init, shuffle, augment, dropout;  // default fixed:0
    std::optional<InitPerturb> init_perturb;
    SiteSettings sites{};  // default tree everywhere
    SourceSetting shuffle_within_batch = SourceSetting::off();
    bool operator==(const NoiseConfig&) const = default;
};

/// A noise preset of Zhuang et al. 2021: the seeds of the four sources and the implementation
/// preset. control = fixed:0 + deterministic, algo = random + deterministic, impl = fixed:0 +
/// fast, algo+impl = random + fast.
struct NoisePreset {
    SourceSetting seeds;
    const char* impl;
};
std::optional<NoisePreset> noise_preset(std::string_view name);
const std::vector<std::string>& noise_preset_names();  // control, algo, impl, algo+impl

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

}  // namespace dt
