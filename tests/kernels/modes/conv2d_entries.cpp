// SPDX-License-Identifier: MIT
// conv.dgrad and conv.wgrad (kernels/conv2d.h: conv2d_backward_data, conv2d_backward_weight) for
// the accumulation-mode tester. Shapes: odd sizes, strides 1-3, padding (also as wide as the
// image), kernels 1 (pointwise and strided), 3, 5, 7, more samples than one wgrad wave (16), more
// positions than one K block, more live rows and output channels than one exact wgrad tile
// holds, 5 wgrad tree groups (3 combine as a chain would); then the thread shapes (37 samples:
// 3 wgrad waves; 1 sample: the parallel GEMM; 9000 weights: slices across threads), the
// sample-order, ill-conditioned and key shapes, and the contention shapes (SmallCNN's conv2 at
// batch 128: 8 wgrad partials and 3 dgrad row partials per element; N = 32 with a 2x3 kernel:
// two of each, which commute), Atomic's only: Recipe and Bound in every mode there would make
// the entries 6 times slower; last, two shapes of the exact wgrad's direct tiles (channel blocks
// of 64, rows in blocks of 28 and a shorter one).
// Ill-conditioned inputs make the terms exact and span 2^+-20 (wgrad: 1x1 maps and kernel,
// x = 1, the leaves are dy; the last 32 samples negate the first 32 in another order, exact sum
// 0) or 2^+-12 (dgrad: one output channel, dy = 1, the 25 per-tap values are the weights), with
// alternating signs. Kahan beats tree on their total error, not on every element (a lucky one
// leaves tree exact): the shapes hold six draws' worth, 24 output channels (wgrad) and 18 input
// channels (dgrad).
// Bound constants c (c * eps32 * the same sum over |terms|; P = Ho*Wo, N samples):
//   wgrad  G * P + (tree depth | number) of the N / G group partials + 2 for tree | atomic
//          (G = min(N, conv2d_tree_group(P) | kConv2dAtomicGroup)); P + (1 | N) + 2 for
//          kahan, exact | permuted;
//   dgrad  Co + (1 | Kh*Kw) + 2 for kahan, exact | tree, permuted; Co*Kh*Kw + 1 for tree on
//          conv2d_dgrad_is_forward shapes (one fma chain); Co + Kw + Kh for atomic (a tap's
//          chain over Co, Kw - 1 adds inside its kernel row, the Kh row partials in any order).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/conv2d.h"
#include "kernels/ref/conv2d_order_ref.h"
#include "kernels/ref/conv2d_ref.h"
#include "tests/kernels/modes/entry_helpers.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::Conv2dParams;
namespace c = kernels::common;

const std::vector<Conv2dParams> kShapes = {
    geom(3, 2, 7, 5, 3, 3, 3, 1, 1),
    geom(2, 3, 9, 9, 4, 3, 3, 2, 1),
    geom(2, 1, 8, 8, 5, 1, 1, 1, 0),
    geom(2, 2, 9, 9, 3, 1, 1, 3, 1),
    geom(2, 2, 11, 9, 3, 7, 7, 1, 3),
    geom(17, 3, 5, 5, 2, 3, 3, 1, 1),
    geom(4, 3, 10, 10, 2, 5, 5, 3, 0),
    geom(2, 2, 20, 19, 3, 3, 3, 1, 1),
    geom(2, 3, 2, 2, 4, 5, 5, 1, 2),
    geom(2, 2, 6, 8, 3, 2, 3, 1, 0),
    geom(5, 16, 4, 4, 10, 3, 3, 1, 1),  // exact, small maps: full + partial tiles
    geom(3, 16, 4, 4, 70, 3, 3, 1, 1),  // exact: 64-channel tiles, 8-channel groups + rest
    geom(33, 12, 8, 8, 9, 3, 3, 1, 1),  // exact: N x P = 2112, 96-row spans (colt budget)
    geom(3, 3, 7, 6, 32, 3, 3, 1, 1),   // few live rows, Co = 32: direct wgrad leaves
    geom(67, 2, 8, 8, 3, 3, 3, 1, 1),   // 5 wgrad tree groups of 16
    geom(37, 4, 10, 9, 8, 3, 3, 1, 1),  // 15-17: threads
    geom(1, 16, 14, 14, 32, 3, 3, 1, 1),
    geom(19, 2, 9, 9, 500, 3, 3, 2, 1),
    geom(37, 3, 9, 8, 5, 3, 3, 1, 1),  // 18, 19: sample order
    geom(6, 2, 7, 7, 4, 5, 5, 2, 2),
    geom(64, 3, 1, 1, 24, 1, 1, 1, 0),      // 20: ill-conditioned wgrad
    geom(2, 18, 9, 9, 1, 5, 5, 1, 2),       // 21: ill-conditioned dgrad
    geom(23, 3, 8, 8, 4, 3, 3, 1, 1),       // 22: key
    geom(128, 16, 14, 14, 32, 3, 3, 1, 1),  // 23, 24: contention
    geom(32, 8, 14, 14, 16, 2, 3, 1, 1),
    geom(40, 8, 6, 6, 128, 3, 3, 1, 1),  // 25, 26: exact direct tiles, 2 x 64 channels, 16
    geom(70, 24, 5, 5, 16, 3, 3, 1, 1)};
const Conv2dParams& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }

/// leaves[k * L + e], e = (o, c, ki, kj): the fma chain from +0 over positions ascending of
/// dy * xpad (padding +0, so a dead tap's leaf is +0), continued over the `group` samples of
/// leaf k in order (1: one leaf per sample).
std::vector<float> wgrad_leaves(const std::vector<float>& x, const std::vector<float>& dy,
                                const Conv2dParams& p, int64_t group) {
    const int64_t L = wsize(p);
    std::vector<float> leaves(static_cast<std::size_t>((p.n + group - 1) / group * L), 0.0f);
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t ci = 0; ci < p.ci; ++ci)
                for (int64_t ki = 0; ki < p.kh; ++ki)
                    for (int64_t kj = 0; kj < p.kw; ++kj) {
                        float& acc =
                            leaves[s / group * L + ((o * p.ci + ci) * p.kh + ki) * p.kw + kj];
                        for (int64_t oh = 0; oh < p.ho; ++oh)
                            for (int64_t ow = 0; ow < p.wo; ++ow) {
                                const int64_t ih = oh * p.stride - p.pad + ki;
                                const int64_t iw = ow * p.stride - p.pad + kj;
                                const bool in = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
                                acc = std::fma(
                                    dy[((s * p.co + o) * p.ho + oh) * p.wo + ow],
                                    in ? x[((s * p.ci + ci) * p.h + ih) * p.w + iw] : 0.0f, acc);
                            }
                    }
    return leaves;
}

/// dx[s, c, ih, iw] by the mode's recipe (e.recipe below; tree is the order reference's); pi:
/// permute_order(Kh*Kw, key).
float dgrad_element(const std::vector<float>& dy, const std::vector<float>& w,
                    const Conv2dParams& p, AccumMode mode, const std::vector<uint32_t>& pi,
                    int64_t s, int64_t ci, int64_t ih, int64_t iw) {
    const int64_t kk = p.kh * p.kw;
    std::vector<float> tap(static_cast<std::size_t>(kk)), t;
    std::vector<char> has(static_cast<std::size_t>(kk));
    for (int64_t k = 0; k < kk; ++k)
        has[k] = dgrad_tap(dy, w, p, s, ci, ih, iw, k / p.kw, k % p.kw, &tap[k]);
    if (mode == AccumMode::kAtomic) {
        float out = 0.0f;
        for (int64_t ki = 0; ki < p.kh; ++ki) {
            float row = 0.0f;
            for (int64_t k = ki * p.kw; k < (ki + 1) * p.kw; ++k)
                if (has[k]) row = row + tap[k];
            out = out + row;
        }
        return out;
    }
    for (int64_t j = 0; j < kk; ++j) {
        const int64_t k = mode == AccumMode::kPermuted ? pi[j] : j;
        if (has[k]) t.push_back(tap[k]);
    }
    return sum_in_order(t, mode, false);
}

/// What both entries share: the shapes, the samples, which shapes each check uses.
ModesEntry conv2d_entry(const std::string& kernel) {
    ModesEntry e;
    e.kernel = kernel;
    for (const Conv2dParams& p : kShapes) e.shapes.push_back(describe(p));
    e.samples = [](int s) { return at(s).n; };
    e.thread_shapes = {15, 16, 17};
    e.order_shapes = {18, 19};
    e.key_shape = 22;
    e.atomic_shapes = {23, 24};
    e.atomic_only_shapes = {23, 24};
    return e;
}

}  // namespace

ModesEntry conv2d_backward_data_entry() {
    ModesEntry e = conv2d_entry("conv2d_backward_data");
    e.crosses_samples = false;
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // dy, w
        const Conv2dParams& p = at(s);
        if (kind == Inputs::kIll)
            return Floats{std::vector<float>(static_cast<std::size_t>(ysize(p)), 1.0f),
                          spread(wsize(p), tag + 1, 5, 25)};
        return Floats{uniform_floats(ysize(p), -1, 1, test_seed(), tag),
                      uniform_floats(wsize(p), -1, 1, test_seed(), tag + 1)};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        Conv2dParams p = at(s);
        p.accum = spec;
        d.table().conv2d_backward_data(d.in(in[0]), d.in(in[1]), d.out(xsize(p)), p);
    };
    // Per element (s, c, ih, iw), the per-tap values t (an fma chain over o ascending, the same
    // in every mode) of the taps whose output position exists: tree as conv2d_order_ref.h
    // states it (+0 + t ascending, or the transposed forward's one chain), kahan
    // kahan_add ascending, exact, permuted +0 + t in permute_order(Kh*Kw, key); atomic the
    // kernel rows' partials (+0 + t, kj ascending) added from +0 in ascending ki (the order the
    // items (sample, ki) take at one thread).
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const Conv2dParams& p = at(s);
        std::vector<float> dx(static_cast<std::size_t>(xsize(p)));
        if (spec.mode == AccumMode::kTree) {  // the one statement of its order
            kernels::ref::conv2d_backward_data_order(in[0].data(), in[1].data(), dx.data(), p);
            return Floats{dx};
        }
        std::vector<uint32_t> pi(static_cast<std::size_t>(p.kh * p.kw));
        c::permute_order(pi.data(), p.kh * p.kw, spec.permute_key);
        for (int64_t n = 0; n < p.n; ++n)
            for (int64_t ci = 0; ci < p.ci; ++ci)
                for (int64_t ih = 0; ih < p.h; ++ih)
                    for (int64_t iw = 0; iw < p.w; ++iw)
                        dx[((n * p.ci + ci) * p.h + ih) * p.w + iw] =
                            dgrad_element(in[0], in[1], p, spec.mode, pi, n, ci, ih, iw);
        return Floats{dx};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const Conv2dParams& p = at(s);
        return reference_with(in, magnitudes, xsize(p), [&](auto dy, auto w, auto dx) {
            kernels::ref::conv2d_backward_data(dy, w, dx, p);
        });
    };
    e.bound = [](int s, AccumMode m) {
        const Conv2dParams& p = at(s);
        const double co = static_cast<double>(p.co), kk = static_cast<double>(p.kh * p.kw);
        return m == AccumMode::kAtomic ? co + static_cast<double>(p.kw + p.kh)
               : m == AccumMode::kTree && kernels::conv2d_dgrad_is_forward(p) ? co * kk + 1
               : m == AccumMode::kKahan || m == AccumMode::kExact             ? co + 3
                                                                              : co + kk + 2;
    };
    e.terms = [](int s) { return at(s).kh * at(s).kw; };
    e.ill_shape = 21;
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        const Conv2dParams& p = at(s);
        return Floats{rows_in(in[0], p.co * p.ho * p.wo, order), in[1]};
    };
    e.permuted = [](int s, const Floats& out, const std::vector<int64_t>& order) {
        const Conv2dParams& p = at(s);
        return Floats{rows_in(out[0], p.ci * p.h * p.w, order)};
    };
    e.atomic_settled = [](int s, const Floats&) {  // at most two kernel rows
        return settled_all({std::vector<float>(static_cast<std::size_t>(xsize(at(s))))},
                           at(s).kh <= 2);
    };
    e.mode_free = [](int s) {  // a 1x1 kernel: one tap per element, no sum for a mode to order
        return at(s).kh * at(s).kw == 1 ? std::vector<int>{0} : std::vector<int>{};
    };
    return e;
}

ModesEntry conv2d_backward_weight_entry() {
    ModesEntry e = conv2d_entry("conv2d_backward_weight");
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // x, dy
        const Conv2dParams& p = at(s);
        if (kind != Inputs::kIll)
            return Floats{uniform_floats(xsize(p), -1, 1, test_seed(), tag),
                          uniform_floats(ysize(p), -1, 1, test_seed(), tag + 1)};
        std::vector<float> dy = spread(ysize(p), tag + 1, 7, 41);
        const int64_t half = p.n / 2, row = p.co * p.ho * p.wo;
        for (int64_t k = 0; k < half * row; ++k)  // sample half + j: -(sample (j + 5) % half)
            dy[half * row + k] = -dy[(k / row + 5) % half * row + k % row];
        return Floats{std::vector<float>(static_cast<std::size_t>(xsize(p)), 1.0f), dy};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        Conv2dParams p = at(s);
        p.accum = spec;
        d.table().conv2d_backward_weight(d.in(in[0]), d.in(in[1]), d.out(wsize(p)), p);
    };
    // Leaves per sample (the fma chain over positions ascending of dy * xpad) combined over
    // samples: tree as conv2d_order_ref.h states it (leaves of conv2d_tree_group(P) samples,
    // the left-complete tree in group order); kahan, the kahan tree of (leaf, +0) pairs;
    // exact; permuted, +0 + leaf in permute_order(N, key); atomic, leaves of kConv2dAtomicGroup
    // samples added from +0 in ascending order (the groups' order at one thread).
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const Conv2dParams& p = at(s);
        const int64_t L = wsize(p);
        std::vector<float> dw(static_cast<std::size_t>(L));
        if (spec.mode == AccumMode::kTree) {  // the one statement of its order
            kernels::ref::conv2d_backward_weight_order(in[0].data(), in[1].data(), dw.data(), p);
            return Floats{dw};
        }
        const int64_t group = spec.mode == AccumMode::kAtomic ? kernels::kConv2dAtomicGroup : 1;
        const std::vector<float> leaves = wgrad_leaves(in[0], in[1], p, group);
        const int64_t count = static_cast<int64_t>(leaves.size()) / L;
        std::vector<uint32_t> order(static_cast<std::size_t>(p.n));
        c::permute_order(order.data(), p.n, spec.permute_key);
        std::vector<float> t(static_cast<std::size_t>(count));
        for (int64_t el = 0; el < L; ++el) {
            for (int64_t k = 0; k < count; ++k)
                t[k] = leaves[(spec.mode == AccumMode::kPermuted ? order[k] : k) * L + el];
            dw[el] = sum_in_order(t, spec.mode, true);
        }
        return Floats{dw};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const Conv2dParams& p = at(s);
        return reference_with(in, magnitudes, wsize(p), [&](auto x, auto dy, auto dw) {
            kernels::ref::conv2d_backward_weight(x, dy, dw, p);
        });
    };
    e.bound = [](int s, AccumMode m) {
        const Conv2dParams& p = at(s);
        const double P = static_cast<double>(p.ho * p.wo), N = static_cast<double>(p.n);
        const double Gt = std::min<double>(N, kernels::conv2d_tree_group(p.ho * p.wo));
        const double Ga = std::min<double>(N, kernels::kConv2dAtomicGroup);
        return m == AccumMode::kAtomic ? Ga * P + std::ceil(N / Ga) + 2
               : m == AccumMode::kTree ? Gt * P + std::ceil(std::log2(std::ceil(N / Gt))) + 2
               : m == AccumMode::kKahan || m == AccumMode::kExact ? P + 3
                                                                  : P + N + 2;
    };
    e.terms = [](int s) { return at(s).n; };
    e.ill_shape = 20;
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        const Conv2dParams& p = at(s);
        return Floats{rows_in(in[0], p.ci * p.h * p.w, order),
                      rows_in(in[1], p.co * p.ho * p.wo, order)};
    };
    e.permuted = [](int, const Floats& out, const std::vector<int64_t>&) { return out; };
    e.atomic_settled = [](int s, const Floats&) {  // at most two groups of samples
        return settled_all({std::vector<float>(static_cast<std::size_t>(wsize(at(s))))},
                           at(s).n <= 2 * kernels::kConv2dAtomicGroup);
    };
    e.mode_free = [](int s) {  // one sample: one leaf, no sum for a mode to order
        return at(s).n == 1 ? std::vector<int>{0} : std::vector<int>{};
    };
    return e;
}

}  // namespace dt::test
