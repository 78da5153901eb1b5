// SPDX-License-Identifier: MIT
// Presets, the init perturbation and the resolution of the noise switchboard (contract in
// noise_config.h). Parsing the flags that set it: apps/common/noise_flags.cpp.
#include "engine/noise/noise_config.h"

#include <cmath>
#include <random>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

const char* source_kind_name(SourceKind kind) {
    switch (kind) {
        case SourceKind::kFixed: return "fixed";
        case SourceKind::kRandom: return "random";
        case SourceKind::kOff: return "off";
    }
    return "?";
}

// ---- init perturbation ----

std::pair<float, float> apply_init_perturb(const InitPerturb& p,
                                           const std::vector<std::string>& names,
                                           const std::vector<Tensor>& tensors) {
    DT_CHECK(names.size() == tensors.size(), "apply_init_perturb: ", names.size(), " names for ",
             tensors.size(), " tensors");
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i] != p.param) continue;
        Tensor t = tensors[i];
        if (p.index < 0 || p.index >= t.numel()) {
            throw ValueError(str("index ", p.index, " is out of range for ", p.param, " (",
                                 t.str(), ", ", t.numel(), " elements): expected an index in "
                                 "[0, ", t.numel(), ")"));
        }
        // One element read and written through the tensor's device memory (any device).
        const DeviceMemory& memory = device_memory(t.device());
        float* at = t.f32() + p.index;
        float before = 0.0f;
        memory.to_host(&before, at, sizeof before);
        // The adjacent float32 toward +inf / -inf: a one-ulp change (a subnormal step from 0).
        const float after = std::nextafter(before, p.direction > 0 ? INFINITY : -INFINITY);
        memory.from_host(at, &after, sizeof after);
        return {before, after};
    }
    throw ValueError(str("no trainable tensor named '", p.param, "'; expected one of ",
                         join_text(names)));
}

// ---- presets ----

std::optional<SiteSettings> impl_preset(std::string_view name) {
    SiteSettings sites{};
    auto set_where = [&](bool (*where)(ReduceSite), AccumMode mode) {
        for (ReduceSite s : all_reduce_sites()) {
            if (where(s)) sites[static_cast<std::size_t>(s)].mode = mode;
        }
    };
    if (name == "deterministic") return sites;
    if (name == "fast") {
        set_where(reduce_site_atomic_in_fast, AccumMode::kAtomic);
        return sites;
    }
    if (name == "exact") {  // exact where the order of samples matters; tree elsewhere
        set_where(reduce_site_crosses_samples, AccumMode::kExact);
        return sites;
    }
    if (name == "exact-all") {
        set_where([](ReduceSite) { return true; }, AccumMode::kExact);
        return sites;
    }
    return std::nullopt;
}

const std::vector<std::string>& impl_preset_names() {
    static const std::vector<std::string> v = {"deterministic", "fast", "exact", "exact-all"};
    return v;
}

std::optional<NoisePreset> noise_preset(std::string_view name) {
    const bool algo = name == "algo" || name == "algo+impl";
    const bool impl = name == "impl" || name == "algo+impl";
    if (!algo && !impl && name != "control") return std::nullopt;
    return NoisePreset{algo ? SourceSetting::random() : SourceSetting::fixed(0),
                       impl ? "fast" : "deterministic"};
}

const std::vector<std::string>& noise_preset_names() {
    static const std::vector<std::string> v = {"control", "algo", "impl", "algo+impl"};
    return v;
}

// ---- resolution ----

uint64_t os_entropy64() {
    std::random_device rd;
    const uint64_t hi = rd();
    const uint64_t lo = rd();
    return (hi << 32) | (lo & 0xFFFFFFFFull);
}

namespace {
template <typename F>
void for_each_setting(NoiseConfig& c, F f) {  // ORDER: the order of the draws
    for (SourceSetting* s : {&c.init, &c.shuffle, &c.augment, &c.dropout}) f(*s);
    for (SiteSetting& site : c.sites) {
        if (site.mode == AccumMode::kPermuted) f(site.permute);
    }
    f(c.shuffle_within_batch);
}
}  // namespace

void resolve_noise_config(NoiseConfig& c, const EntropyFn& entropy) {
    for_each_setting(c, [&](SourceSetting& s) {
        if (s.kind == SourceKind::kRandom && !s.drawn) {
            s.seed = entropy();
            s.drawn = true;
        }
    });
}

bool noise_config_resolved(const NoiseConfig& cfg) {
    NoiseConfig c = cfg;
    bool ok = true;
    for_each_setting(c, [&](SourceSetting& s) { ok = ok && (s.is_off() || s.resolved()); });
    return ok;
}

ReduceSiteSpecs reduce_site_specs(const NoiseConfig& c) {
    DT_CHECK(noise_config_resolved(c), "reduce_site_specs: call resolve_noise_config first");
    ReduceSiteSpecs specs{};
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const SiteSetting& s = c.sites[i];
        specs[i] = kernels::common::accum_spec(
            s.mode, s.mode == AccumMode::kPermuted ? s.permute.seed : 0);
    }
    return specs;
}

}  // namespace dt
