// SPDX-License-Identifier: MIT
// The rounding-error report (contract in audit_error.h).
#include "apps/audit/audit_error.h"

#include <cmath>

namespace dt {

namespace {

nlohmann::json number(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("inf");
}

}  // namespace

nlohmann::json site_error_json(const SiteProbe& probe) {
    nlohmann::json sites = nlohmann::json::object();
    for (ReduceSite site : all_reduce_sites()) {
        if (probe.error(site, 0).calls == 0) continue;
        nlohmann::json modes = nlohmann::json::object();
        for (int m = 0; m < kNumProbedModes; ++m) {
            const SiteError& e = probe.error(site, m);
            modes[accum_mode_name(kProbedModes[m])] = {
                {"calls", e.calls},
                {"elements", e.elements},
                {"differing_elements", e.differing},
                {"max_ulp", number(e.max_ulp)},
                {"mean_ulp", number(e.elements ? e.sum_ulp / static_cast<double>(e.elements) : 0)},
                {"max_relative_error", number(e.max_relative)}};
        }
        sites[reduce_site_name(site)] = modes;
    }
    return sites;
}

void print_site_errors(std::FILE* out, const SiteProbe& probe) {
    std::fprintf(out, "rounding error against the exact mode (same inputs, same step)\n");
    std::fprintf(out, "%-14s %-9s %10s %9s %10s %10s %11s\n", "site", "mode", "elements", "differ%",
                 "max ulp", "mean ulp", "max rel");
    for (ReduceSite site : all_reduce_sites()) {
        if (probe.error(site, 0).calls == 0) continue;
        for (int m = 0; m < kNumProbedModes; ++m) {
            const SiteError& e = probe.error(site, m);
            const double n = static_cast<double>(e.elements);
            std::fprintf(out, "%-14s %-9s %10lld %8.2f%% %10.4g %10.4g %11.3g\n",
                         m == 0 ? reduce_site_name(site) : "", accum_mode_name(kProbedModes[m]),
                         static_cast<long long>(e.elements),
                         n > 0 ? 100.0 * static_cast<double>(e.differing) / n : 0.0, e.max_ulp,
                         n > 0 ? e.sum_ulp / n : 0.0, e.max_relative);
        }
    }
}

}  // namespace dt
