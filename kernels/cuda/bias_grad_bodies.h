// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA bias.grad kernels (kernels/cuda/bias_grad.cu), host-device,
// tested on the host over whole grids. The recipe is kernels/bias_add.h's: in tree, kahan, exact
// and permuted, the per-channel totals of channel_totals_bodies.h over the terms dy[s, c, q]
// (a row per (sample, channel)); atomic: one thread per (group of kBiasAddAtomicGroup samples,
// channel) sums +0, samples in order, positions ascending, and atomic-adds the partial into the
// zeroed db (the race that makes the mode nondeterministic on the GPU too).
#pragma once
#include <cstdint>

#include "kernels/bias_add.h"
#include "kernels/common/atomic_add.h"
#include "kernels/cuda/channel_totals_bodies.h"

namespace dt::kernels::cuda {

/// The term of row r (= s * C + c) at position i: dy itself.
struct BiasGradTerm {
    const float* dy;
    int64_t P;
    DT_HD void operator()(int64_t r, int64_t i, float* t) const { t[0] = dy[r * P + i]; }
};

DT_HD ChannelTotals bias_grad_totals(const BiasAddParams& p) {
    return ChannelTotals{p.n, p.c, p.p, p.accum};
}

/// kAtomic: one thread per (sample group, channel); db zeroed first. No ORDER on purpose.
DT_HD void bias_grad_atomic_body(const GridPos& t, const float* dy, float* db,
                                 const BiasAddParams& p) {
    const int64_t groups = (p.n + kBiasAddAtomicGroup - 1) / kBiasAddAtomicGroup;
    common::grid_stride(t, groups * p.c, [&](int64_t i) {
        const int64_t g = i / p.c, c = i % p.c;
        const int64_t s0 = g * kBiasAddAtomicGroup;
        const int64_t s1 = s0 + kBiasAddAtomicGroup < p.n ? s0 + kBiasAddAtomicGroup : p.n;
        float part = 0.0f;
        for (int64_t s = s0; s < s1; ++s) {
            const float* r = dy + (s * p.c + c) * p.p;
            for (int64_t q = 0; q < p.p; ++q) part = part + r[q];
        }
        common::atomic_add_float(db + c, part);
    });
}

}  // namespace dt::kernels::cuda
