// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA conv2d backward kernels (kernels/cuda/conv2d*.cu), host-device,
// tested on the host over whole grids against the CPU; the forward (and dgrad's tree mode on
// conv2d_dgrad_is_forward shapes, the transposed forward) is the tiled block program of
// conv2d_tiled_bodies.h. A thread runs, for its element, the chain or sum kernels/conv2d.h
// defines (no column buffer; the tiled programs' values, where the launcher uses them, are the
// same chains), so the order is the recipe's by construction:
//   dgrad     the per-tap values t (fma chain over o ascending; the launcher computes them with
//             the tiled block program of conv2d_dgrad_tiled_bodies.h into a buffer, the
//             per-element variant here where they are needed; on 3x3 'same' shapes the exact and
//             atomic modes are the transposed forward there instead, which comes here only for
//             its rare elements), then per dx element those of the taps whose
//             output position exists, combined in tap order (tree), with kahan_add (kahan), an
//             ExactAcc (exact), in the call's tap permutation (permuted); atomic: one thread per
//             (element, kernel row) sums its row's taps and atomic-adds the partial
//   wgrad     in two phases: the tiled block program of conv2d_tiled_bodies.h computes the
//             leaves into a buffer (tree: the fma chain continued over a group of
//             conv2d_tree_group(P) samples; kahan, exact, permuted: a sample's fma chain over p),
//             then one thread per element combines its leaves: tree: the left-complete tree;
//             kahan: (leaf, +0) in the kahan tree; exact: an ExactAcc; permuted: +0 + leaves in
//             the sample permutation (the per-element variant here, one thread computing all of
//             an element's leaves, gives the same bits and is timed against it). atomic: the
//             tiled program's chains over groups of kConv2dAtomicGroup samples, atomic-added.
//             Dead taps: dw = +0.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/divisor.h"
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

/// Tap r = (c, ki, kj) of convolution q reads the image somewhere (kernels/conv2d.h: dead taps
/// are left out of every sum).
DT_HD bool conv_tap_r_live(const Conv2dParams& q, int64_t r) {
    return conv_tap_live((r / q.kw) % q.kh, q.h, q.ho, q.pad, q.stride) &&
           conv_tap_live(r % q.kw, q.w, q.wo, q.pad, q.stride);
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

/// The divisions of dgrad's per-element index arithmetic, made by the launcher: by W, H and Ci
/// (an element's sample, channel and cell), by the stride (its live taps) and by the elements
/// of the launch (the atomic mode's thread per element and kernel row).
struct DgradDivisors {
    common::Divisor w, h, ci, stride, elems;
};
inline DgradDivisors conv_dgrad_divisors(const Conv2dParams& p, int64_t elems) {
    return {common::make_divisor(p.w), common::make_divisor(p.h), common::make_divisor(p.ci),
            common::make_divisor(p.stride), common::make_divisor(elems)};
}

/// The live taps of input coordinate i along one axis (those k with an output position
/// o = (i + pad - k) / stride, exact, in [0, n_out)), ascending: k = k0, k0 + stride, ... (count
/// of them) at o = o0, o0 - 1, .... Worked out once per coordinate: no division per tap.
struct AxisTaps {
    int64_t k0 = 0, o0 = 0, count = 0;
};
DT_HD AxisTaps conv_axis_taps(int64_t i, int64_t kernel, int64_t pad,
                              const common::Divisor& stride_by, int64_t n_out) {
    const int64_t stride = stride_by.d;
    // o * stride + k = i + pad, so k = (i + pad) mod stride first
    const common::QuotRem first = common::divide(i + pad, stride_by);
    const int64_t o_first = first.q, k_first = first.r;
    if (k_first >= kernel) return {};
    const int64_t last_k = common::quotient(kernel - 1 - k_first, stride_by);  // while k < kernel
    const int64_t j_hi = o_first < last_k ? o_first : last_k;         // ... and o >= 0
    const int64_t j_lo = o_first >= n_out ? o_first - n_out + 1 : 0;  // o < n_out from there
    if (j_hi < j_lo) return {};
    return {k_first + j_lo * stride, o_first - j_lo, j_hi - j_lo + 1};
}

/// f(tap, oh, ow) for the live taps of input cell (ih, iw), tap = ki * Kw + kj ascending.
template <class F>
DT_HD void conv_for_each_live_tap(const Conv2dParams& p, const DgradDivisors& d, int64_t ih,
                                  int64_t iw, F&& f) {
    const AxisTaps rows = conv_axis_taps(ih, p.kh, p.pad, d.stride, p.ho);
    const AxisTaps cols = conv_axis_taps(iw, p.kw, p.pad, d.stride, p.wo);
    for (int64_t a = 0; a < rows.count; ++a) {
        const int64_t ki = rows.k0 + a * p.stride;
        for (int64_t b = 0; b < cols.count; ++b)
            f(ki * p.kw + cols.k0 + b * p.stride, rows.o0 - a, cols.o0 - b);
    }
}

/// dx element e = ((s * Ci + c) * H + ih) * W + iw.
struct DxCell {
    int64_t s, c, ih, iw;
};
DT_HD DxCell conv_dx_cell(int64_t e, const DgradDivisors& d) {
    const common::QuotRem row = common::divide(e, d.w), plane = common::divide(row.q, d.h),
                          sample = common::divide(plane.q, d.ci);
    return {sample.q, sample.r, plane.r, row.r};
}

/// dx element e's sum over its taps (every mode but atomic), t(s, c, tap, oh, ow) giving the
/// per-tap value of tap = ki * Kw + kj at output position (oh, ow): tree: +0 + t in tap order;
/// kahan: kahan_add in tap order; exact: exact_sum_of (a double, or an ExactAcc where that would
/// not be exact); permuted: +0 + t in `order`'s tap order.
/// Each mode keeps only its own accumulator (tree's thread touches no local memory).
template <class TapValue>
DT_HD float conv_dgrad_sum(const Conv2dParams& p, const DgradDivisors& d, int64_t e,
                           const uint32_t* order, const TapValue& t) {
    const DxCell x = conv_dx_cell(e, d);
    const auto each_value = [&](auto&& add) {
        conv_for_each_live_tap(p, d, x.ih, x.iw, [&](int64_t tap, int64_t oh, int64_t ow) {
            add(t(x.s, x.c, tap, oh, ow));
        });
    };
    switch (p.accum.mode) {
        case common::AccumMode::kKahan: {
            common::KahanSum k = common::kahan_zero();
            each_value([&](float v) { common::kahan_add(k, v); });
            return common::kahan_value(k);
        }
        case common::AccumMode::kExact:  // in double where that is exact (accum_exact_short.h)
            return common::exact_sum_of(each_value);
        case common::AccumMode::kPermuted: {
            float sum = 0.0f;  // ORDER: +0 + t in `order`'s tap order (live taps only)
            for (int64_t j = 0; j < p.kh * p.kw; ++j) {
                const int64_t tap = order[j];
                const int64_t oh = conv_out_of(x.ih, tap / p.kw, p.pad, p.stride, p.ho);
                const int64_t ow = conv_out_of(x.iw, tap % p.kw, p.pad, p.stride, p.wo);
                if (oh >= 0 && ow >= 0) sum = sum + t(x.s, x.c, tap, oh, ow);
            }
            return sum;
        }
        default: {
            float sum = 0.0f;
            each_value([&](float v) { sum = sum + v; });  // ORDER: +0 + t in tap order
            return sum;
        }
    }
}

/// The atomic mode's row partial of dx element e and kernel row ki: +0 + t(ki, 0) + t(ki, 1) +
/// ... over the row's taps whose output position exists; false when none does.
template <class TapValue>
DT_HD bool conv_dgrad_row(const Conv2dParams& p, const DgradDivisors& d, int64_t e, int64_t ki,
                          const TapValue& t, float* part) {
    const DxCell x = conv_dx_cell(e, d);
    const int64_t oh = conv_out_of(x.ih, ki, p.pad, p.stride, p.ho);
    const AxisTaps cols = conv_axis_taps(x.iw, p.kw, p.pad, d.stride, p.wo);
    if (oh < 0 || cols.count == 0) return false;
    float sum = 0.0f;
    for (int64_t b = 0; b < cols.count; ++b)
        sum = sum + t(x.s, x.c, ki * p.kw + cols.k0 + b * p.stride, oh, cols.o0 - b);
    *part = sum;
    return true;
}

/// The per-tap values computed where they are needed (conv_dgrad_tap): the per-element variant.
struct DgradTapChain {
    const float* dy;
    const float* w;
    Conv2dParams p;  // (by value: kernel arguments)
    DT_HD float operator()(int64_t s, int64_t c, int64_t tap, int64_t oh, int64_t ow) const {
        return conv_dgrad_tap(dy, w, p, s, c, tap / p.kw, tap % p.kw, oh, ow);
    }
};

/// The per-tap values of samples [s_lo, s_hi) stored by conv_dgrad_taps_tiled_block
/// (conv2d_tiled_bodies.h): t[(tap * Ci + c) * cols + (s - s_lo) * P + oh * Wo + ow],
/// cols = (s_hi - s_lo) * P.
struct DgradTapBuffer {
    const float* t;
    int64_t s_lo, cols;
    int64_t ci, ho, wo;
    DT_HD float operator()(int64_t s, int64_t c, int64_t tap, int64_t oh, int64_t ow) const {
        return t[(tap * ci + c) * cols + (s - s_lo) * ho * wo + oh * wo + ow];
    }
};

/// dx elements [e0, e1), every mode but atomic, and tree only off conv2d_dgrad_is_forward
/// shapes (there the launcher runs the transposed forward, conv2d_tiled_bodies.h), the tap
/// values from `t` (DgradTapChain: one thread per element computing them; DgradTapBuffer: read
/// from the tiled program's buffer, the launcher's way). `order`: the permutation of the Kh*Kw
/// taps (kPermuted). `d`: conv_dgrad_divisors(p, e1 - e0).
template <class TapValue>
DT_HD void conv2d_dgrad_body(const GridPos& g, const TapValue& t, float* dx, const uint32_t* order,
                             const Conv2dParams& p, const DgradDivisors& d, int64_t e0,
                             int64_t e1) {
    common::grid_stride(g, e1 - e0,
                        [&](int64_t i) { dx[e0 + i] = conv_dgrad_sum(p, d, e0 + i, order, t); });
}

/// kAtomic dgrad of dx elements [e0, e1): one thread per (kernel row ki, element) atomic-adds
/// its row partial (conv_dgrad_row) into the zeroed dx. No ORDER on purpose.
/// `d`: conv_dgrad_divisors(p, e1 - e0).
template <class TapValue>
DT_HD void conv2d_dgrad_atomic_body(const GridPos& g, const TapValue& t, float* dx,
                                    const Conv2dParams& p, const DgradDivisors& d, int64_t e0,
                                    int64_t e1) {
    common::grid_stride(g, p.kh * (e1 - e0), [&](int64_t u) {
        const common::QuotRem row = common::divide(u, d.elems);  // (kernel row, element)
        const int64_t e = e0 + row.r;
        float part;
        if (conv_dgrad_row(p, d, e, row.q, t, &part)) common::atomic_add_float(dx + e, part);
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

/// A dw element's coordinates (o, c, ki, kj) and whether its tap is live (reads the image).
struct WgradElem {
    int64_t o, c, ki, kj;
    bool live;
};
DT_HD WgradElem conv_wgrad_elem(const Conv2dParams& p, int64_t e) {
    const int64_t R = p.ci * p.kh * p.kw, r = e % R;
    return WgradElem{e / R, r / (p.kh * p.kw), (r / p.kw) % p.kh, r % p.kw, conv_tap_r_live(p, r)};
}

/// Samples per leaf of a dw element (kernels/conv2d.h): tree: G = conv2d_tree_group(P), the
/// leaves are the N / G group chains; kahan, exact, permuted: 1, the N per-sample chains.
DT_HD int64_t conv_wgrad_leaf_group(const Conv2dParams& p) {
    return p.accum.mode == common::AccumMode::kTree ? conv2d_tree_group(p.ho * p.wo) : 1;
}
DT_HD int64_t conv_wgrad_leaf_count(const Conv2dParams& p) {
    const int64_t G = conv_wgrad_leaf_group(p);
    return (p.n + G - 1) / G;
}

/// Leaf g of dw element d: the chain over the samples of leaf g.
DT_HD float conv_wgrad_leaf(const float* x, const float* dy, const Conv2dParams& p,
                            const WgradElem& d, int64_t g) {
    const int64_t G = conv_wgrad_leaf_group(p);
    const int64_t s0 = g * G, s1 = s0 + G < p.n ? s0 + G : p.n;
    return conv_wgrad_chain(x, dy, p, d.o, d.c, d.ki, d.kj, s0, s1, 0.0f);
}

/// dw elements, every mode but atomic, one thread per element computing all its leaves (the
/// per-element variant, timed by the kernel bench; the launcher computes the leaves with the
/// tiled block program and combines them with conv2d_wgrad_combine_body).
/// `order`: the permutation of the N samples (kPermuted).
DT_HD void conv2d_wgrad_body(const GridPos& t, const float* x, const float* dy, float* dw,
                             const uint32_t* order, const Conv2dParams& p) {
    common::grid_stride(t, p.co * p.ci * p.kh * p.kw, [&](int64_t e) {
        const WgradElem d = conv_wgrad_elem(p, e);
        if (!d.live) {
            dw[e] = 0.0f;  // a dead tap
            return;
        }
        // ORDER: the mode's combination of the leaves (tree: group chains in the tree)
        auto leaf = [&](int64_t g) { return conv_wgrad_leaf(x, dy, p, d, g); };
        dw[e] = combine_sample_leaves(leaf, conv_wgrad_leaf_count(p), p.accum.mode, order);
    });
}

/// The second phase of the launcher's wgrad (every mode but atomic), after the first has stored
/// leaf g of element e at leaves[g * len + e - e0] (conv_wgrad_tiled_block with WgradLeafOut,
/// conv2d_tiled_bodies.h: the same chains as conv_wgrad_leaf): dw[e] for e in [e0, e0 + len):
/// +0 for a dead tap, else the mode's combination of the element's leaves (as the per-element
/// variant). With p.exact_out (exact mode only): the leaves' exact sum added to exact_out[e]
/// instead, dw not written.
DT_HD void conv2d_wgrad_combine_body(const GridPos& t, const float* leaves, const uint32_t* order,
                                     float* dw, const Conv2dParams& p, int64_t e0, int64_t len) {
    const int64_t R = p.ci * p.kh * p.kw;
    common::grid_stride(t, len, [&](int64_t i) {
        auto leaf = [&](int64_t g) { return leaves[g * len + i]; };
        const bool live = conv_tap_r_live(p, (e0 + i) % R);
        if (p.exact_out != nullptr) {  // exact, a part of a split batch: dw is not written
            if (live) add_sample_leaves_exact(leaf, p.n, p.exact_out[e0 + i]);
            return;
        }
        if (!live) {
            dw[e0 + i] = 0.0f;
            return;
        }
        // ORDER: the mode's combination of the leaves (tree: group chains in the tree)
        dw[e0 + i] = combine_sample_leaves(leaf, conv_wgrad_leaf_count(p), p.accum.mode, order);
    });
}

/// dw[e] = the element's accumulator rounded once.
DT_HD void conv2d_wgrad_exact_round_body(const GridPos& t, const common::ExactAcc* accs, float* dw,
                                         int64_t n) {
    common::grid_stride(t, n, [&](int64_t e) { dw[e] = common::exact_value(accs[e]); });
}

}  // namespace dt::kernels::cuda
