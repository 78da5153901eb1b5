// SPDX-License-Identifier: MIT
// `detrain audit --error`: each accumulation mode's rounding error against the exact mode, per
// reduction site, measured over real training steps (engine/noise/site_probe.h).
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/noise/site_probe.h"

namespace dt {

/// Per site and mode: calls, elements, differing elements, max and mean ULP, max relative error.
nlohmann::json site_error_json(const SiteProbe& probe);
/// The same as a table (sites without calls are left out).
void print_site_errors(std::FILE* out, const SiteProbe& probe);

}  // namespace dt
