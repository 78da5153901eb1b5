// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA bias.grad kernels (kernels/cuda/bias_grad.cu), host-device,
// tested on the host over whole grids. The recipe is kernels/bias_add.h's, per mode:
//   tree, permuted  leaves kernel: one thread per (sample, channel), leaf = +0 + dy[s,c,0] + ...
//                   (positions ascending, as the CPU's leaf); combine kernel: one thread per
//                   channel, the leaves in sample order into the tree (or from +0 in the
//                   permuted order of the samples, drawn once by one thread).
//   kahan           the same with compensated leaves (kahan_sum) and the kahan tree.
//   exact           one ExactAcc per (sample, channel), merged per channel (integer sums: any
//                   grouping gives the same exact total) and rounded once.
//   atomic          one thread per (group of kBiasAddAtomicGroup samples, channel): +0, samples
//                   in order, positions ascending; atomic-added into the zeroed db (the race
//                   that makes this mode nondeterministic on the GPU too).
#pragma once
#include <cstdint>

#include "kernels/bias_add.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// The first element of dy's (sample s, channel c) row of P positions.
DT_HD const float* bias_row(const float* dy, int64_t s, int64_t c, const BiasAddParams& p) {
    return dy + (s * p.c + c) * p.p;
}

/// leaves[s * C + c]: the tree mode's leaf (tree, permuted).
DT_HD void bias_grad_leaves_body(const GridPos& t, const float* dy, float* leaves,
                                 const BiasAddParams& p) {
    common::grid_stride(t, p.n * p.c, [&](int64_t i) {
        leaves[i] = common::sum_sequential(bias_row(dy, i / p.c, i % p.c, p), p.p);
    });
}

/// leaves[s * C + c]: the kahan mode's compensated leaf.
DT_HD void bias_grad_kahan_leaves_body(const GridPos& t, const float* dy,
                                       common::KahanSum* leaves, const BiasAddParams& p) {
    common::grid_stride(t, p.n * p.c, [&](int64_t i) {
        leaves[i] = common::kahan_sum(bias_row(dy, i / p.c, i % p.c, p), p.p);
    });
}

/// accs[s * C + c]: the exact sum of the (sample, channel) row, not rounded.
DT_HD void bias_grad_exact_leaves_body(const GridPos& t, const float* dy, common::ExactAcc* accs,
                                       const BiasAddParams& p) {
    common::grid_stride(t, p.n * p.c, [&](int64_t i) {
        common::ExactAcc a;
        common::exact_init(a);
        common::exact_add_array(a, bias_row(dy, i / p.c, i % p.c, p), p.p);
        accs[i] = a;
    });
}

/// Global thread 0: order[0..N) of the permuted mode.
DT_HD void bias_grad_order_body(const GridPos& t, uint32_t* order, const BiasAddParams& p) {
    if (t.global() == 0) common::permute_order(order, p.n, p.accum.permute_key);
}

/// db[c] from the leaves, one thread per channel (tree, permuted: `leaves`; kahan: `kleaves`;
/// exact: `accs`).
DT_HD void bias_grad_combine_body(const GridPos& t, const float* leaves,
                                  const common::KahanSum* kleaves, const common::ExactAcc* accs,
                                  const uint32_t* order, float* db, const BiasAddParams& p) {
    common::grid_stride(t, p.c, [&](int64_t c) {
        switch (p.accum.mode) {
            case common::AccumMode::kTree:  // ORDER: the tree over samples in index order
                db[c] = common::reduce_tree_combine(leaves + c, p.n, p.c);
                return;
            case common::AccumMode::kPermuted:  // ORDER: +0 + leaf_pi[0] + leaf_pi[1] + ...
                db[c] = common::permuted_sum(leaves + c, order, p.n, p.c);
                return;
            case common::AccumMode::kKahan:  // ORDER: the kahan tree, then kahan_value
                db[c] = common::kahan_value(common::kahan_tree_combine(kleaves + c, p.n, p.c));
                return;
            case common::AccumMode::kExact: {  // ORDER: none (exact), rounded once
                common::ExactAcc a;
                common::exact_init(a);
                for (int64_t s = 0; s < p.n; ++s) common::exact_merge(a, accs[s * p.c + c]);
                db[c] = common::exact_value(a);
                return;
            }
            case common::AccumMode::kAtomic: return;  // bias_grad_atomic_body
        }
    });
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
            const float* r = bias_row(dy, s, c, p);
            for (int64_t q = 0; q < p.p; ++q) part = part + r[q];
        }
        common::atomic_add_float(db + c, part);
    });
}

}  // namespace dt::kernels::cuda
