// SPDX-License-Identifier: MIT
#include "engine/noise/reduce_sites.h"

#include <array>

namespace dt {

namespace {
std::array<AccumMode, static_cast<std::size_t>(ReduceSite::kCount)> g_modes{};  // all kTree
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
        case ReduceSite::kCount: break;
    }
    return "?";
}

AccumMode accum_mode(ReduceSite site) { return g_modes[static_cast<std::size_t>(site)]; }

void set_accum_mode(ReduceSite site, AccumMode mode) {
    g_modes[static_cast<std::size_t>(site)] = mode;
}

}  // namespace dt
