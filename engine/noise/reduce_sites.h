// SPDX-License-Identifier: MIT
// Every reduction site in training, by name, and the accumulation spec selected for each (issue 3's
// --impl / --impl-site land here). Ops ask accum_spec_for_call(site) (or accum_mode(site)) for
// how to accumulate and pass it to their kernels, so one switch per site lands in one place.
//
// Storage. One AccumSpec per site. For kPermuted the stored permute_key is the site's *run seed*
// (from `permuted:<seed>`), not a per-call key: accum_spec_for_call derives the key of each call
// as permute_key(run seed, site, call) (kernels/common/accum_permuted.h), where `call` is a
// per-site counter of calls since reset_reduce_counters(). The counter makes every call of a
// site reduce in a different order (as atomics would) while a rerun from the same seed replays
// every order exactly: the n-th call of a site in a run always gets the same key. Counters count
// every accum_spec_for_call of the site, in any mode, so they must be reset at the start of a run
// (run_training does). The registry is process-global; configure it between steps, from one
// thread (the training loop), never while ops run.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/accum_mode.h"

namespace dt {

using kernels::common::AccumMode;
using kernels::common::AccumSpec;

enum class ReduceSite : int {
    kConvWgrad,    // conv.wgrad: weight gradient, sum over samples x positions
    kConvDgrad,    // conv.dgrad: input gradient, sum over output channels x taps
    kLinearWgrad,  // linear.wgrad: sum over samples
    kLinearDgrad,  // linear.dgrad: sum over output features
    kBiasGrad,     // bias.grad: sum over samples x positions
    kBnStats,      // bn.stats: per-channel mean/variance over samples x positions
    kBnBackward,   // bn.backward: per-channel sums of dy and dy*xhat
    kPoolBackward, // pool.backward: overlapping windows scattering into the input gradient
    kLoss,         // loss: mean over the batch
    kGradAllreduce,  // grad.allreduce: gradients (and the loss) summed over the processes of a
                     // data-parallel run and over micro-batches (engine/runtime/batch_split.h)
    // The GPT model's sites, after the CNNs' (a site's index keys its permuted orders and its
    // slot in checkpoints: appending keeps both).
    kEmbedGrad,  // embed.grad: token and position embedding gradients, rows scattered from every
                 // (sequence, position)
    kLnStats,    // ln.stats: layer norm mean/variance over a token's features
    kLnGrad,     // ln.grad: layer norm dgamma/dbeta over tokens, and dx's two row sums
    kAttnFwd,    // attn.fwd: the softmax's max and sum and the weighted sum of values over keys
    kAttnGrad,   // attn.grad: dQ summed over keys, dK and dV summed over queries
    kGradNorm,   // grad.norm: the squares of every gradient summed for norm clipping
    kCount
};
constexpr int kNumReduceSites = static_cast<int>(ReduceSite::kCount);

/// Every site, in enum order (for loops).
const std::array<ReduceSite, kNumReduceSites>& all_reduce_sites();

/// "conv.wgrad", ... (the names users type).
const char* reduce_site_name(ReduceSite site);
/// The site named `name`, or nullopt.
std::optional<ReduceSite> reduce_site_from_name(std::string_view name);
/// Every site name, in enum order.
const std::vector<std::string>& reduce_site_names();
/// True when the site reduces across the samples of a batch (its result depends on the order of
/// samples unless the mode is exact): conv.wgrad, linear.wgrad, bias.grad, bn.stats,
/// bn.backward, loss, grad.allreduce (it sums the parts of a split batch), embed.grad, ln.grad.
bool reduce_site_crosses_samples(ReduceSite site);
/// True when `--impl fast` selects kAtomic at the site: the cross-sample sites, where many terms
/// meet in few outputs and atomics pay off (reduce_sites.cpp says why the others stay tree).
bool reduce_site_atomic_in_fast(ReduceSite site);

/// "tree", "atomic", "kahan", "exact", "permuted" (the table of kernels/common/accum_mode.h).
using kernels::common::accum_mode_name;
std::optional<AccumMode> accum_mode_from_name(std::string_view name);
/// Every mode name, in enum order.
const std::vector<std::string>& accum_mode_names();

/// Accumulation mode currently selected for `site` (default: tree).
AccumMode accum_mode(ReduceSite site);
/// Sets the mode and keeps the site's stored permute seed.
void set_accum_mode(ReduceSite site, AccumMode mode);

/// The stored spec of `site` (for kPermuted, permute_key is the site's run seed).
AccumSpec reduce_site_spec(ReduceSite site);
void set_reduce_site_spec(ReduceSite site, AccumSpec spec);

using ReduceSiteSpecs = std::array<AccumSpec, kNumReduceSites>;
/// All sites' stored specs, in enum order.
ReduceSiteSpecs reduce_site_specs();
void set_reduce_site_specs(const ReduceSiteSpecs& specs);

/// The spec for ONE kernel call at `site`: the stored mode; for kPermuted the per-call key
/// permute_key(run seed, site, call) with call = the site's counter, which is then incremented.
/// Every call increments the counter, whatever the mode.
AccumSpec accum_spec_for_call(ReduceSite site);
/// Sets every site's call counter to 0 (start of a run).
void reset_reduce_counters();
/// Calls of accum_spec_for_call(site) since the last reset.
uint64_t reduce_call_count(ReduceSite site);
/// Sets the site's call counter (a resumed run continues the counts of its checkpoint).
void set_reduce_call_count(ReduceSite site, uint64_t calls);

/// Sets every site (and resets the counters) for its lifetime; restores the previous specs and
/// counters on exit. For tests and for run_training.
class ScopedReduceConfig {
 public:
    explicit ScopedReduceConfig(const ReduceSiteSpecs& specs);
    /// The same spec at every site.
    explicit ScopedReduceConfig(AccumSpec all);
    ~ScopedReduceConfig();
    ScopedReduceConfig(const ScopedReduceConfig&) = delete;
    ScopedReduceConfig& operator=(const ScopedReduceConfig&) = delete;

 private:
    ReduceSiteSpecs saved_specs_;
    std::array<uint64_t, kNumReduceSites> saved_counts_;
};

}  // namespace dt
