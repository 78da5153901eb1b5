// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA bias.grad kernels (kernels/cuda/bias_grad.cu), host-device,
// tested on the host over whole grids. The recipe is kernels/bias_add.h's: the per-channel totals
// of channel_totals_bodies.h over the terms dy[s, c, q] (a row per (sample, channel)) in every
// mode; atomic: each row's leaf (+0, positions ascending) atomic-added into the zeroed db, the
// GPU's own split of the mode (bias_add.h), as nondeterministic as the CPU's.
#pragma once
#include <cstdint>

#include "kernels/bias_add.h"
#include "kernels/cuda/channel_totals_bodies.h"

namespace dt::kernels::cuda {

/// The term of row r (= s * C + c, channel c) at position i: dy itself.
struct BiasGradTerm {
    const float* dy;
    int64_t P;
    DT_HD void operator()(int64_t r, int64_t, int64_t i, float* t) const { t[0] = dy[r * P + i]; }
};

DT_HD ChannelTotals bias_grad_totals(const BiasAddParams& p) {
    return ChannelTotals{p.n, p.c, p.p, p.accum};
}

}  // namespace dt::kernels::cuda
