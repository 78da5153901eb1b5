// SPDX-License-Identifier: MIT
// The reduce-site registry (contract in reduce_sites.h).
#include "engine/noise/reduce_sites.h"

#include <atomic>

#include "kernels/common/accum_permuted.h"

namespace dt {

namespace {

constexpr std::size_t kN = static_cast<std::size_t>(kNumReduceSites);

ReduceSiteSpecs g_specs = [] {
    ReduceSiteSpecs s{};
    for (AccumSpec& a : s) a = kernels::common::accum_spec(AccumMode::kTree);
    return s;
}();
std::array<std::atomic<uint64_t>, kN> g_calls{};  // zero-initialised

std::size_t idx(ReduceSite site) { return static_cast<std::size_t>(site); }

}  // namespace

const std::array<ReduceSite, kNumReduceSites>& all_reduce_sites() {
    static const std::array<ReduceSite, kNumReduceSites> v = [] {
        std::array<ReduceSite, kNumReduceSites> a{};
        for (int i = 0; i < kNumReduceSites; ++i) a[static_cast<std::size_t>(i)] = ReduceSite(i);
        return a;
    }();
    return v;
}

const char* reduce_site_name(ReduceSite site) {
    switch (site) {
        case ReduceSite::kConvWgrad: return "conv.wgrad";
        case ReduceSite::kConvDgrad: return "conv.dgrad";
        case ReduceSite::kLinearWgrad: return "linear.wgrad";
        case ReduceSite::kLinearDgrad: return "linear.dgrad";
        case ReduceSite::kBiasGrad: return "bias.grad";
        case ReduceSite::kBnStats: return "bn.stats";
        case ReduceSite::kBnBackward: return "bn.backward";
        case ReduceSite::kPoolBackward: return "pool.backward";
        case ReduceSite::kLoss: return "loss";
        case ReduceSite::kGradAllreduce: return "grad.allreduce";
        case ReduceSite::kEmbedGrad: return "embed.grad";
        case ReduceSite::kLnStats: return "ln.stats";
        case ReduceSite::kLnGrad: return "ln.grad";
        case ReduceSite::kAttnFwd: return "attn.fwd";
        case ReduceSite::kAttnGrad: return "attn.grad";
        case ReduceSite::kGradNorm: return "grad.norm";
        case ReduceSite::kCount: break;
    }
    return "?";
}

std::optional<ReduceSite> reduce_site_from_name(std::string_view name) {
    for (ReduceSite s : all_reduce_sites()) {
        if (name == reduce_site_name(s)) return s;
    }
    return std::nullopt;
}

const std::vector<std::string>& reduce_site_names() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> names;
        for (ReduceSite s : all_reduce_sites()) names.emplace_back(reduce_site_name(s));
        return names;
    }();
    return v;
}

bool reduce_site_crosses_samples(ReduceSite site) {
    switch (site) {
        case ReduceSite::kConvWgrad:
        case ReduceSite::kLinearWgrad:
        case ReduceSite::kBiasGrad:
        case ReduceSite::kBnStats:
        case ReduceSite::kBnBackward:
        case ReduceSite::kLoss:
        case ReduceSite::kGradAllreduce:
        case ReduceSite::kEmbedGrad:
        case ReduceSite::kLnGrad: return true;
        default: return false;
    }
}

// The `fast` preset: atomic where it helps, i.e. where many terms meet in few outputs: the sites
// that reduce across the samples of a batch (split-K over sample groups, as GPU libraries do).
// The within-sample sites (conv.dgrad, linear.dgrad, pool.backward: many outputs, a few terms
// each) stay tree: there the atomic path costs 1.1-25x the tree (bench/accum_sites_bench.cpp,
// accum_sites_bn_bench.cpp; docs/results/switchboard-cost.md), so no fast engine would use it.
// Their atomic paths remain available per site (--impl-site conv.dgrad=atomic) as noise sources.
bool reduce_site_atomic_in_fast(ReduceSite site) { return reduce_site_crosses_samples(site); }

std::optional<AccumMode> accum_mode_from_name(std::string_view name) {
    for (AccumMode m : kernels::common::kAccumModes) {
        if (name == accum_mode_name(m)) return m;
    }
    return std::nullopt;
}

const std::vector<std::string>& accum_mode_names() {
    static const std::vector<std::string> v(std::begin(kernels::common::kAccumModeNames),
                                            std::end(kernels::common::kAccumModeNames));
    return v;
}

AccumMode accum_mode(ReduceSite site) { return g_specs[idx(site)].mode; }

void set_accum_mode(ReduceSite site, AccumMode mode) { g_specs[idx(site)].mode = mode; }

AccumSpec reduce_site_spec(ReduceSite site) { return g_specs[idx(site)]; }

void set_reduce_site_spec(ReduceSite site, AccumSpec spec) { g_specs[idx(site)] = spec; }

ReduceSiteSpecs reduce_site_specs() { return g_specs; }

void set_reduce_site_specs(const ReduceSiteSpecs& specs) { g_specs = specs; }

AccumSpec accum_spec_for_call(ReduceSite site) {
    const AccumSpec stored = g_specs[idx(site)];
    const uint64_t call = g_calls[idx(site)].fetch_add(1, std::memory_order_relaxed);
    if (stored.mode != AccumMode::kPermuted) return kernels::common::accum_spec(stored.mode);
    const uint64_t key = kernels::common::permute_key(stored.permute_key,
                                                      static_cast<uint32_t>(site), call);
    return kernels::common::accum_spec(AccumMode::kPermuted, key);
}

void reset_reduce_counters() {
    for (auto& c : g_calls) c.store(0, std::memory_order_relaxed);
}

uint64_t reduce_call_count(ReduceSite site) {
    return g_calls[idx(site)].load(std::memory_order_relaxed);
}

void set_reduce_call_count(ReduceSite site, uint64_t calls) {
    g_calls[idx(site)].store(calls, std::memory_order_relaxed);
}

ScopedReduceConfig::ScopedReduceConfig(const ReduceSiteSpecs& specs) : saved_specs_(g_specs) {
    for (std::size_t i = 0; i < kN; ++i) saved_counts_[i] = g_calls[i].load();
    set_reduce_site_specs(specs);
    reset_reduce_counters();
}

ScopedReduceConfig::ScopedReduceConfig(AccumSpec all)
    : ScopedReduceConfig([all] {
          ReduceSiteSpecs s{};
          s.fill(all);
          return s;
      }()) {}

ScopedReduceConfig::~ScopedReduceConfig() {
    g_specs = saved_specs_;
    for (std::size_t i = 0; i < kN; ++i) g_calls[i].store(saved_counts_[i]);
}

}  // namespace dt
