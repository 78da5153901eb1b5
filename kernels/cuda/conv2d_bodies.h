// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA conv2d backward kernels (kernels/cuda/conv2d.cu), host-device,
// tested on the host over whole grids against the CPU; the forward (and dgrad's tree mode on
// conv2d_dgrad_is_forward shapes, the transposed forward) is the tiled block program of
// conv2d_tiled_bodies.h. Every element is one thread running the chain or sum kernels/conv2d.h
// defines for it (no column buffer), so the order is the recipe's by construction:
//   dgrad     per dx element the per-tap values t (fma chain over o ascending) of the taps whose
//             output position exists, combined in tap order (tree), with kahan_add (kahan), an
//             ExactAcc (exact), in the call's tap permutation (permuted); atomic: one thread per
//             (element, kernel row) sums its row's taps and atomic-adds the partial
//   wgrad     per dw element over samples: tree: fma chains continued over groups of
//             conv2d_tree_group(P) samples, the group leaves in the left-complete tree; kahan:
//             per-sample leaves (fma chains over p) as (leaf, +0) in the kahan tree; exact: an
//             ExactAcc of the per-sample leaves; permuted: +0 + leaves in the sample permutation;
//             atomic: one thread per (element, group of kConv2dAtomicGroup samples) atomic-adds
//             its group chain. Dead taps give dw = +0.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/sample_leaves.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// Kernel offset k reads the image (not the padding) at some output position along one axis:
/// the first output o with o*stride - pad + k >= 0 exists and still reads inside.
DT_HD bool conv_tap_live(int64_t k, int64_t n_in, int64_t n_out, int64_t pad, int64_t stride) {
    const int64_t need = pad - k;
    const int64_t o0 = need <= 0 ? 0 : (need + stride - 1) / stride;
    return o0 < n_out && o0 * stride - pad + k < n_in;
}

struct ConvWeight {  // w (Co, Ci, Kh, Kw)
    const float* w;
    int64_t ci, kh, kw;
    DT_HD float operator()(int64_t o, int64_t c, int64_t ki, int64_t kj) const {
        return w[((o * ci + c) * kh + ki) * kw + kj];
    }
};

/// The transposed convolution whose forward is dgrad on conv2d_dgrad_is_forward shapes.
DT_HD Conv2dParams conv_dgrad_as_forward(const Conv2dParams& p) {
    Conv2dParams q = p;
    q.ci = p.co, q.h = p.ho, q.w = p.wo, q.co = p.ci, q.pad = p.kh - 1 - p.pad;
    q.ho = p.h, q.wo = p.w, q.stride = 1;
    return q;
}

struct FlippedWeight {  // w'[c, o, ki, kj] = w[o, c, K-1-ki, K-1-kj], indexed (o', c') = (c, o)
    const float* w;
    int64_t ci, k;
    DT_HD float operator()(int64_t oq, int64_t cq, int64_t ki, int64_t kj) const {
        // In the transposed convolution, output channel oq is the input channel c of w and
        // input channel cq is its output channel o.
        return w[((cq * ci + oq) * k + (k - 1 - ki)) * k + (k - 1 - kj)];
    }
};

/// The per-tap value t: fma chain from +0 over o ascending of w[o,c,ki,kj] * dy[s,o,oh,ow].
DT_HD float conv_dgrad_tap(const float* dy, const float* w, const Conv2dParams& p, int64_t s,
                           int64_t c, int64_t ki, int64_t kj, int64_t oh, int64_t ow) {
    float acc = 0.0f;
    for (int64_t o = 0; o < p.co; ++o)
        acc = fmaf(w[((o * p.ci + c) * p.kh + ki) * p.kw + kj],
                   dy[((s * p.co + o) * p.ho + oh) * p.wo + ow], acc);
    return acc;
}

/// The output position of tap k for input coordinate i along one axis, or -1 when none.
DT_HD int64_t conv_out_of(int64_t i, int64_t k, int64_t pad, int64_t stride, int64_t n_out) {
    const int64_t num = i + pad - k;
    if (num < 0 || num % stride != 0) return -1;
    const int64_t o = num / stride;
    return o < n_out ? o : -1;
}

/// dx elements, every mode but atomic, and tree only off conv2d_dgrad_is_forward shapes (there
/// the launcher runs the transposed forward, conv2d_tiled_bodies.h). `order`: the permutation
/// of the Kh*Kw taps (kPermuted).
DT_HD void conv2d_dgrad_body(const GridPos& t, const float* dy, const float* w, float* dx,
                             const uint32_t* order, const Conv2dParams& p) {
    const int64_t HW = p.h * p.w, taps = p.kh * p.kw;
    const common::AccumMode mode = p.accum.mode;
    common::grid_stride(t, p.n * p.ci * HW, [&](int64_t e) {
        const int64_t s = e / (p.ci * HW), c = (e / HW) % p.ci, ih = (e % HW) / p.w, iw = e % p.w;
        float sum = 0.0f;
        common::KahanSum k = common::kahan_zero();
        common::ExactAcc a;
        common::exact_init(a);
        for (int64_t j = 0; j < taps; ++j) {
            const int64_t tap = mode == common::AccumMode::kPermuted ? order[j] : j;
            const int64_t ki = tap / p.kw, kj = tap % p.kw;
            const int64_t oh = conv_out_of(ih, ki, p.pad, p.stride, p.ho);
            const int64_t ow = conv_out_of(iw, kj, p.pad, p.stride, p.wo);
            if (oh < 0 || ow < 0) continue;
            const float v = conv_dgrad_tap(dy, w, p, s, c, ki, kj, oh, ow);
            if (mode == common::AccumMode::kKahan) {
                common::kahan_add(k, v);
            } else if (mode == common::AccumMode::kExact) {
                common::exact_add(a, v);
            } else {
                sum = sum + v;  // ORDER: +0 + t in tap order (tree) or the permutation's
            }
        }
        dx[e] = mode == common::AccumMode::kKahan   ? common::kahan_value(k)
                : mode == common::AccumMode::kExact ? common::exact_value(a)
                                                    : sum;
    });
}

/// kAtomic dgrad: one thread per (kernel row ki, element): +0 + t(ki, 0) + t(ki, 1) + ... over
/// the row's taps that exist, atomic-added into the zeroed dx. No ORDER on purpose.
DT_HD void conv2d_dgrad_atomic_body(const GridPos& t, const float* dy, const float* w, float* dx,
                                    const Conv2dParams& p) {
    const int64_t elems = p.n * p.ci * p.h * p.w, HW = p.h * p.w;
    common::grid_stride(t, p.kh * elems, [&](int64_t u) {
        const int64_t ki = u / elems, e = u % elems;
        const int64_t s = e / (p.ci * HW), c = (e / HW) % p.ci, ih = (e % HW) / p.w, iw = e % p.w;
        const int64_t oh = conv_out_of(ih, ki, p.pad, p.stride, p.ho);
        if (oh < 0) return;
        float part = 0.0f;
        bool any = false;
        for (int64_t kj = 0; kj < p.kw; ++kj) {
            const int64_t ow = conv_out_of(iw, kj, p.pad, p.stride, p.wo);
            if (ow < 0) continue;
            part = part + conv_dgrad_tap(dy, w, p, s, c, ki, kj, oh, ow);
            any = true;
        }
        if (any) common::atomic_add_float(dx + e, part);
    });
}

/// The wgrad chain of dw element (o, r = (c, ki, kj)) over samples [s0, s1), positions
/// ascending, continued from `acc`: acc = fma(dy[s,o,p], xpad[s,r,p], acc).
DT_HD float conv_wgrad_chain(const float* x, const float* dy, const Conv2dParams& p, int64_t o,
                             int64_t c, int64_t ki, int64_t kj, int64_t s0, int64_t s1, float acc) {
    for (int64_t s = s0; s < s1; ++s) {
        for (int64_t oh = 0; oh < p.ho; ++oh) {
            const int64_t ih = oh * p.stride - p.pad + ki;
            for (int64_t ow = 0; ow < p.wo; ++ow) {
                const int64_t iw = ow * p.stride - p.pad + kj;
                const bool in = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
                const float xv = in ? x[((s * p.ci + c) * p.h + ih) * p.w + iw] : 0.0f;
                acc = fmaf(dy[((s * p.co + o) * p.ho + oh) * p.wo + ow], xv, acc);
            }
        }
    }
    return acc;
}

/// dw elements, every mode but atomic. `order`: the permutation of the N samples (kPermuted).
DT_HD void conv2d_wgrad_body(const GridPos& t, const float* x, const float* dy, float* dw,
                             const uint32_t* order, const Conv2dParams& p) {
    const int64_t R = p.ci * p.kh * p.kw;
    common::grid_stride(t, p.co * R, [&](int64_t e) {
        const int64_t o = e / R, r = e % R, c = r / (p.kh * p.kw), ki = (r / p.kw) % p.kh,
                      kj = r % p.kw;
        if (!conv_tap_live(ki, p.h, p.ho, p.pad, p.stride) ||
            !conv_tap_live(kj, p.w, p.wo, p.pad, p.stride)) {
            dw[e] = 0.0f;  // a dead tap
            return;
        }
        if (p.accum.mode == common::AccumMode::kTree) {
            // ORDER: fma chains continued over groups of G samples, the group leaves in the tree
            const int64_t G = conv2d_tree_group(p.ho * p.wo);
            auto group = [&](int64_t g) {
                const int64_t s0 = g * G, s1 = s0 + G < p.n ? s0 + G : p.n;
                return conv_wgrad_chain(x, dy, p, o, c, ki, kj, s0, s1, 0.0f);
            };
            dw[e] = combine_sample_leaves(group, (p.n + G - 1) / G, p.accum.mode, order);
            return;
        }
        auto leaf = [&](int64_t s) {
            return conv_wgrad_chain(x, dy, p, o, c, ki, kj, s, s + 1, 0.0f);
        };
        dw[e] = combine_sample_leaves(leaf, p.n, p.accum.mode, order);
    });
}

/// The grid of the split-K wgrad bodies: one thread per (group of kConv2dAtomicGroup samples,
/// dw element). For every item of a live tap, item(e, o, c, ki, kj, s0, s1) runs with the
/// element's index and coordinates and the group's samples [s0, s1); dead taps are skipped (their
/// dw stays +0).
template <class Item>
DT_HD void conv_wgrad_group_items(const GridPos& t, const Conv2dParams& p, const Item& item) {
    const int64_t R = p.ci * p.kh * p.kw, L = p.co * R;
    const int64_t groups = (p.n + kConv2dAtomicGroup - 1) / kConv2dAtomicGroup;
    common::grid_stride(t, groups * L, [&](int64_t u) {
        const int64_t g = u / L, e = u % L, o = e / R, r = e % R, c = r / (p.kh * p.kw),
                      ki = (r / p.kw) % p.kh, kj = r % p.kw;
        if (!conv_tap_live(ki, p.h, p.ho, p.pad, p.stride) ||
            !conv_tap_live(kj, p.w, p.wo, p.pad, p.stride))
            return;
        const int64_t s0 = g * kConv2dAtomicGroup;
        const int64_t s1 = s0 + kConv2dAtomicGroup < p.n ? s0 + kConv2dAtomicGroup : p.n;
        item(e, o, c, ki, kj, s0, s1);
    });
}

/// kAtomic wgrad: each item atomic-adds its group's chain; dw zeroed first. No ORDER on purpose.
DT_HD void conv2d_wgrad_atomic_body(const GridPos& t, const float* x, const float* dy, float* dw,
                                    const Conv2dParams& p) {
    conv_wgrad_group_items(
        t, p, [&](int64_t e, int64_t o, int64_t c, int64_t ki, int64_t kj, int64_t s0, int64_t s1) {
            common::atomic_add_float(dw + e,
                                     conv_wgrad_chain(x, dy, p, o, c, ki, kj, s0, s1, 0.0f));
        });
}

/// The exact mode of conv.wgrad with integer atomics (issue 20: "an exact mode whose threads add
/// into the accumulator's integer limbs with atomics"): the items of the atomic mode, each adding
/// its samples' leaves (the exact mode's leaves: one fma chain over positions per sample) to its
/// own ExactAcc and merging that into the element's shared accumulator with exact_atomic_merge
/// (accs zeroed first). The merges may land in any order: the sum is exact, so the rounding
/// (conv2d_wgrad_exact_round_body) gives the exact mode's bits. ORDER: none.
DT_HD void conv2d_wgrad_exact_limbs_body(const GridPos& t, const float* x, const float* dy,
                                         common::ExactAcc* accs, const Conv2dParams& p) {
    conv_wgrad_group_items(
        t, p, [&](int64_t e, int64_t o, int64_t c, int64_t ki, int64_t kj, int64_t s0, int64_t s1) {
            common::ExactAcc a;
            common::exact_init(a);
            for (int64_t s = s0; s < s1; ++s)
                common::exact_add(a, conv_wgrad_chain(x, dy, p, o, c, ki, kj, s, s + 1, 0.0f));
            common::exact_atomic_merge(accs + e, a);
        });
}

/// dw[e] = the element's accumulator rounded once.
DT_HD void conv2d_wgrad_exact_round_body(const GridPos& t, const common::ExactAcc* accs, float* dw,
                                         int64_t n) {
    common::grid_stride(t, n, [&](int64_t e) { dw[e] = common::exact_value(accs[e]); });
}

}  // namespace dt::kernels::cuda
