// SPDX-License-Identifier: MIT
// Rounding error per accumulation mode, measured in a real training step (issue 22,
// `detrain audit --error`). While a SiteProbe is current, every reduction of the step is
// recomputed by its op, on the same inputs, in the exact mode and in each measured mode (tree,
// kahan, atomic, permuted), and each mode's result is compared element by element with the
// exact one (ULP distance, relative error). The step itself continues with the result of its
// configured mode: the probe changes no bit of training (it uses fixed specs, not the registry's
// per-call counters).
// What "exact" means per site is the mode's contract (kernels/*.h): the exact sum of the site's
// leaves rounded once (e.g. conv.wgrad: of the per-sample leaves), the reference every other
// mode rounds away from. Sites measured: every site except grad.allreduce (one process).
// Outputs compared: conv/linear wgrad and dgrad, bias.grad, pool.backward: the gradient;
// bn.stats: mean and variance; bn.backward: dgamma and dbeta; ln.stats: mean and rstd;
// ln.grad: dgamma and dbeta; loss: the mean loss.
#pragma once
#include <array>
#include <cstdint>
#include <functional>

#include "engine/noise/reduce_sites.h"

namespace dt {

/// The modes a probe measures against exact, in this order.
inline constexpr AccumMode kProbedModes[] = {AccumMode::kTree, AccumMode::kKahan,
                                             AccumMode::kAtomic, AccumMode::kPermuted};
constexpr int kNumProbedModes = 4;

struct SiteError {
    int64_t calls = 0, elements = 0, differing = 0;  // elements whose bits differ from exact
    double max_ulp = 0, sum_ulp = 0;                 // over elements (sum: for the mean)
    double max_relative = 0;                         // |mode - exact| / |exact| (exact != 0)
};

class SiteProbe {
 public:
    /// `run(spec, out)` computes the site's n outputs with `spec` into out (host memory).
    void measure(ReduceSite site, int64_t n,
                 const std::function<void(const AccumSpec&, float*)>& run);
    const SiteError& error(ReduceSite site, int mode_index) const {
        return errors_[static_cast<std::size_t>(site)][static_cast<std::size_t>(mode_index)];
    }

 private:
    std::array<std::array<SiteError, kNumProbedModes>, kNumReduceSites> errors_{};
    uint64_t calls_ = 0;
};

/// The probe of this thread, or null.
SiteProbe* current_site_probe();

class ScopedSiteProbe {
 public:
    explicit ScopedSiteProbe(SiteProbe& probe);
    ~ScopedSiteProbe();
    ScopedSiteProbe(const ScopedSiteProbe&) = delete;
    ScopedSiteProbe& operator=(const ScopedSiteProbe&) = delete;

 private:
    SiteProbe* previous_;
};

/// For ops: current_site_probe()->measure(...) when a probe is current.
inline void probe_site(ReduceSite site, int64_t n,
                       const std::function<void(const AccumSpec&, float*)>& run) {
    if (SiteProbe* p = current_site_probe()) p->measure(site, n, run);
}

}  // namespace dt
