// SPDX-License-Identifier: MIT
// The rounding-error probe (contract in site_probe.h).
#include "engine/noise/site_probe.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/core/ulp.h"
#include "kernels/common/accum_permuted.h"

namespace dt {

namespace {

thread_local SiteProbe* t_probe = nullptr;

}  // namespace

void SiteProbe::measure(ReduceSite site, int64_t n,
                        const std::function<void(const AccumSpec&, float*)>& run) {
    if (n <= 0) return;
    const auto size = static_cast<std::size_t>(n);
    std::vector<float> exact(size), got(size);
    run(kernels::common::accum_spec(AccumMode::kExact), exact.data());
    ++calls_;
    for (int m = 0; m < kNumProbedModes; ++m) {
        // A fixed key per probe call for permuted (the registry's counters stay untouched).
        const uint64_t key =
            kernels::common::permute_key(0x5eedull, static_cast<uint32_t>(site), calls_);
        run(kernels::common::accum_spec(kProbedModes[m], key), got.data());
        SiteError& e = errors_[static_cast<std::size_t>(site)][static_cast<std::size_t>(m)];
        ++e.calls;
        e.elements += n;
        for (std::size_t i = 0; i < size; ++i) {
            uint32_t a, b;
            std::memcpy(&a, &got[i], 4);
            std::memcpy(&b, &exact[i], 4);
            if (a == b) continue;
            ++e.differing;
            const double u = ulp_distance(got[i], exact[i]);
            e.max_ulp = std::max(e.max_ulp, u);
            e.sum_ulp += u;
            if (exact[i] != 0.0f) {
                const double rel = std::fabs(static_cast<double>(got[i]) - exact[i]) /
                                   std::fabs(static_cast<double>(exact[i]));
                e.max_relative = std::max(e.max_relative, rel);
            }
        }
    }
}

SiteProbe* current_site_probe() { return t_probe; }

ScopedSiteProbe::ScopedSiteProbe(SiteProbe& probe) : previous_(t_probe) { t_probe = &probe; }
ScopedSiteProbe::~ScopedSiteProbe() { t_probe = previous_; }

}  // namespace dt
