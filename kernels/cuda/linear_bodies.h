// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA linear kernels (kernels/cuda/linear.cu), host-device,
// tested on the host over whole grids against the CPU (kernels/gemm.h, kernels/linear.h):
//   forward   the GEMM x w^T (gemm_tiled_bodies.h: the CPU's fma chains), then + b[o] once (no
//             add without a bias).
//   dgrad     one thread per dx element: tree: the fma chain over o ascending (the launcher
//             runs it as the tiled GEMM dY . W: the same chain); permuted: over
//             o = pi[0], pi[1], ...; kahan: kahan_add of the rounded products dy * w; exact: an
//             ExactAcc of them; atomic: one thread per (element, chunk of kLinearAtomicChunk
//             features): the chain over the chunk, atomic-added into the zeroed dx.
//   wgrad     one thread per dw element over the samples' products dy[s,o] * x[s,i]: tree: the
//             left-complete tree in sample order; kahan: that tree over (product, +0) with
//             kahan_merge; exact: ExactAcc; permuted: +0 + products in pi's order; atomic: one
//             thread per (element, group of kLinearAtomicGroup samples): +0 + the group's
//             products in order, atomic-added into the zeroed dw. exact with p.exact_out (a part
//             of a split batch): the exact sum added to exact_out[e], dw not written.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/divisor.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/cuda/sample_leaves.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// y[s, o] += b[o] (after the GEMM), once. `out`: make_divisor(p.out), made by the launcher.
DT_HD void linear_bias_body(const GridPos& t, const float* b, float* y, const LinearParams& p,
                            const common::Divisor& out) {
    common::grid_stride(t, p.n * p.out,
                        [&](int64_t e) { y[e] = y[e] + b[common::modulo(e, out)]; });
}

/// dx[s, i], every mode but atomic. `order`: the permutation of the O features (kPermuted).
DT_HD void linear_dgrad_body(const GridPos& t, const float* dy, const float* w, float* dx,
                             const uint32_t* order, const LinearParams& p) {
    common::grid_stride(t, p.n * p.in, [&](int64_t e) {
        const int64_t s = e / p.in, i = e % p.in;
        const float* g = dy + s * p.out;
        switch (p.accum.mode) {
            case common::AccumMode::kKahan: {
                common::KahanSum k = common::kahan_zero();
                for (int64_t o = 0; o < p.out; ++o) common::kahan_add(k, g[o] * w[o * p.in + i]);
                dx[e] = common::kahan_value(k);
                return;
            }
            case common::AccumMode::kExact:  // rounded once (accum_exact_short.h)
                dx[e] = common::exact_sum_of([&](auto&& add) {
                    for (int64_t o = 0; o < p.out; ++o) add(g[o] * w[o * p.in + i]);
                });
                return;
            case common::AccumMode::kPermuted: {
                float acc = 0.0f;  // ORDER: the fma chain over o = pi[0], pi[1], ...
                for (int64_t k = 0; k < p.out; ++k) {
                    const int64_t o = order[k];
                    acc = fmaf(g[o], w[o * p.in + i], acc);
                }
                dx[e] = acc;
                return;
            }
            default: {
                float acc = 0.0f;  // ORDER: the fma chain over o ascending
                for (int64_t o = 0; o < p.out; ++o) acc = fmaf(g[o], w[o * p.in + i], acc);
                dx[e] = acc;
                return;
            }
        }
    });
}

/// kAtomic dgrad: one thread per (chunk, element); dx zeroed first. No ORDER on purpose.
DT_HD void linear_dgrad_atomic_body(const GridPos& t, const float* dy, const float* w, float* dx,
                                    const LinearParams& p) {
    const int64_t chunks = (p.out + kLinearAtomicChunk - 1) / kLinearAtomicChunk;
    common::grid_stride(t, chunks * p.n * p.in, [&](int64_t e) {
        const int64_t ch = e / (p.n * p.in), el = e % (p.n * p.in);
        const int64_t s = el / p.in, i = el % p.in, o0 = ch * kLinearAtomicChunk;
        const int64_t o1 = o0 + kLinearAtomicChunk < p.out ? o0 + kLinearAtomicChunk : p.out;
        float acc = 0.0f;
        for (int64_t o = o0; o < o1; ++o) acc = fmaf(dy[s * p.out + o], w[o * p.in + i], acc);
        common::atomic_add_float(dx + el, acc);
    });
}

/// dw[o, i], every mode but atomic. `order`: the permutation of the N samples (kPermuted).
DT_HD void linear_wgrad_body(const GridPos& t, const float* x, const float* dy, float* dw,
                             const uint32_t* order, const LinearParams& p) {
    common::grid_stride(t, p.out * p.in, [&](int64_t e) {
        const int64_t o = e / p.in, i = e % p.in;
        auto leaf = [&](int64_t s) { return dy[s * p.out + o] * x[s * p.in + i]; };
        if (p.exact_out != nullptr) {  // exact, a part of a split batch: dw is not written
            add_sample_leaves_exact(leaf, p.n, p.exact_out[e]);
            return;
        }
        dw[e] = combine_sample_leaves(leaf, p.n, p.accum.mode, order);
    });
}

/// kAtomic wgrad: one thread per (sample group, element); dw zeroed first. No ORDER on purpose.
DT_HD void linear_wgrad_atomic_body(const GridPos& t, const float* x, const float* dy, float* dw,
                                    const LinearParams& p) {
    const int64_t groups = (p.n + kLinearAtomicGroup - 1) / kLinearAtomicGroup;
    common::grid_stride(t, groups * p.out * p.in, [&](int64_t e) {
        const int64_t g = e / (p.out * p.in), el = e % (p.out * p.in);
        const int64_t o = el / p.in, i = el % p.in, s0 = g * kLinearAtomicGroup;
        const int64_t s1 = s0 + kLinearAtomicGroup < p.n ? s0 + kLinearAtomicGroup : p.n;
        float part = 0.0f;
        for (int64_t s = s0; s < s1; ++s) part = part + dy[s * p.out + o] * x[s * p.in + i];
        common::atomic_add_float(dw + el, part);
    });
}

}  // namespace dt::kernels::cuda
