// SPDX-License-Identifier: MIT
// Every reduction site in training, by name. Ops ask accum_mode(site) for how to accumulate and
// pass it to their kernels, so one switch per site (issue 3's --impl-site) lands in one place.
#pragma once
#include <string>

#include "kernels/common/accum_mode.h"

namespace dt {

using kernels::common::AccumMode;

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
    kCount
};

/// "conv.wgrad", ... (the names users type).
const char* reduce_site_name(ReduceSite site);
/// Accumulation mode currently selected for `site` (default: tree).
AccumMode accum_mode(ReduceSite site);
void set_accum_mode(ReduceSite site, AccumMode mode);

}  // namespace dt
