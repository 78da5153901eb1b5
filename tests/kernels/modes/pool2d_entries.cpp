// SPDX-License-Identifier: MIT
// pool.backward (kernels/pool2d.h: maxpool2d_backward, avgpool2d_backward) for the
// accumulation-mode tester: a dx cell sums the contributions of the windows covering it (max:
// dy[o] into window o's argmax cell; avg: g = dy[o] / (k * k) into each in-range cell).
// Shapes, shared by both entries: overlapping windows (ResNet stem 3x3 s2 p1, 3x3 s1, 2x2 s1,
// 4x4 s3 p2, and one above the kernel's parallel threshold) and windows without overlap (2x2 s2,
// 3x3 s3, 2x2 s3 p1: gapless or gapped; one above the threshold); then the thread shapes (the
// stem shape above the threshold, and 3x3 s1), the single-contribution shape (max at the window
// centres of 3x3 s2: overlapping windows whose contributions land in distinct cells), the
// ill-conditioned, key and contention shapes (3x3 s2 and s1: avg up to 4 and 9 contributions per
// cell, max with ties any number; 2x2 s2: one).
// Inputs: x on a coarse grid (many max ties, so argmax cells collect several windows), its
// argmax computed with the inputs by the cpu maxpool2d_forward and carried as floats; dy
// uniform. Ill-conditioned: dy = +-(1000 + u) alternating, and max's x with peaks on a grid of
// pitch k (at stride 1 every window holds one: a peak collects up to k * k windows). Special:
// on overlapping shapes about a third of dy wide (1e30, 3e38: sums that overflow), subnormal,
// -0, +-inf or NaN; on the mode-free shapes dy with -0, +-inf and subnormals.
// No sample-order check: pooling sums over no samples, and Recipe already pins every plane.
// Bound constant c (c * eps32 * the sum over |contributions|): a cell sums at most k * k
// contributions in any order, rounded once at the end by exact: k * k + 1 for max, and one more
// for avg's rounded division, in every mode.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/pool2d.h"
#include "kernels/ref/pool2d_ref.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::Pool2dParams;
namespace c = kernels::common;

Pool2dParams make(int64_t n, int64_t ch, int64_t h, int64_t w, int k, int s, int pad) {
    Pool2dParams p;
    p.N = n, p.C = ch, p.H = h, p.W = w, p.kernel = k, p.stride = s, p.padding = pad;
    p.Ho = kernels::pool2d_out_size(h, k, s, pad);
    p.Wo = kernels::pool2d_out_size(w, k, s, pad);
    return p;
}

const std::vector<Pool2dParams> kShapes = {
    // 0-4: overlapping windows (4: above the parallel threshold, and a thread shape).
    make(2, 3, 9, 7, 3, 2, 1), make(2, 2, 6, 5, 3, 1, 1), make(3, 2, 10, 10, 2, 1, 0),
    make(1, 3, 11, 13, 4, 3, 2), make(8, 16, 28, 28, 3, 2, 1),
    // 5-9: no overlap (9: above the parallel threshold).
    make(2, 3, 8, 8, 2, 2, 0), make(2, 3, 7, 9, 2, 2, 0), make(1, 2, 9, 9, 3, 3, 0),
    make(2, 2, 11, 10, 2, 3, 1), make(16, 16, 28, 28, 2, 2, 0),
    // 10: threads; 11: single contribution; 12: ill-conditioned; 13: key.
    make(4, 16, 30, 30, 3, 1, 1), make(4, 16, 29, 29, 3, 2, 0), make(2, 4, 24, 24, 3, 1, 1),
    make(2, 4, 16, 16, 3, 1, 1),
    // 14-16: contention.
    make(16, 16, 32, 32, 3, 2, 1), make(16, 16, 32, 32, 3, 1, 1), make(16, 16, 32, 32, 2, 2, 0)};
constexpr int kSingle = 11;
const Pool2dParams& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }
int64_t in_size(const Pool2dParams& p) { return p.N * p.C * p.H * p.W; }
int64_t out_size(const Pool2dParams& p) { return p.N * p.C * p.Ho * p.Wo; }

/// Shape s's outputs are mode-free: no window overlaps another, or (max) the maxima sit at the
/// single-contribution shape's window centres.
bool mode_free_on(int s, bool max) { return at(s).stride >= at(s).kernel || (max && s == kSingle); }

/// x for max pooling (see the head of the file), and its argmax as floats.
std::vector<float> argmax_input(int s, uint32_t tag, Inputs kind) {
    const Pool2dParams& p = at(s);
    std::vector<float> x;
    if (s == kSingle) {  // 100 at (2oh + 1, 2ow + 1): each centre belongs to one window only
        x = uniform_floats(in_size(p), -1, 1, test_seed(), tag);
        for (int64_t pl = 0; pl < p.N * p.C; ++pl)
            for (int64_t oh = 0; oh < p.Ho; ++oh)
                for (int64_t ow = 0; ow < p.Wo; ++ow)
                    x[static_cast<std::size_t>((pl * p.H + 2 * oh + 1) * p.W + 2 * ow + 1)] = 100;
    } else if (kind == Inputs::kIll) {  // peaks at rows and columns 1 mod k
        x.assign(static_cast<std::size_t>(in_size(p)), 0.0f);
        for (int64_t i = 0; i < in_size(p); ++i)
            if ((i / p.W) % p.H % p.kernel == 1 && i % p.W % p.kernel == 1)
                x[static_cast<std::size_t>(i)] = 1;
    } else {  // a coarse grid: ties
        x = uniform_floats(in_size(p), -3, 3, test_seed(), tag);
        for (float& v : x) v = std::floor(v * 2.0f) * 0.5f;
    }
    std::vector<float> y(static_cast<std::size_t>(out_size(p)));
    std::vector<int32_t> am(y.size());
    kernels::cpu::maxpool2d_forward(x.data(), y.data(), am.data(), p);
    return std::vector<float>(am.begin(), am.end());
}

/// dy (see the head of the file); the single-contribution shape's special values are the
/// mode-free shapes' for avg too (there they only feed Recipe).
std::vector<float> dy_input(int s, uint32_t tag, Inputs kind) {
    const int64_t n = out_size(at(s));
    std::vector<float> dy = uniform_floats(n, -1, 1, test_seed(), tag);
    if (kind == Inputs::kIll) {
        for (int64_t i = 0; i < n; ++i) dy[i] = (i % 2 ? -1.0f : 1.0f) * (1000.0f + dy[i]);
    } else if (kind == Inputs::kSpecial && mode_free_on(s, true)) {
        for (int64_t i = 0; i < n; i += 7) dy[i] = -0.0f;
        for (int64_t i = 3; i < n; i += 11) dy[i] = i % 2 ? -INFINITY : INFINITY;
        for (int64_t i = 5; i < n; i += 13) dy[i] = 3e-41f;
    } else if (kind == Inputs::kSpecial) {
        const float wild[] = {1e30f, -1e30f, 1e-30f, -3e-41f,  3e38f,     3e38f, -0.0f,
                              1.0f,  -1.0f,  0.5f,   INFINITY, -INFINITY, NAN,   7e-45f};
        for (float& v : dy) {  // about 1 in 3 wild, else ordinary
            const int pick = static_cast<int>((v + 1) * 20);
            v = pick < 14 ? wild[pick] : v * 0.5f;
        }
    }
    return dy;
}

/// One contribution to a dx cell: the cell, its window o = oh * Wo + ow inside the plane, the
/// value. In the tree's order: planes, then windows row-major, then avg's cells row-major.
struct Contribution {
    int64_t cell, window;
    float value;
};

std::vector<Contribution> contributions(int s, const Floats& in, bool max) {
    const Pool2dParams& p = at(s);
    const std::vector<float>& dy = in[0];
    const float div = static_cast<float>(p.kernel * p.kernel);
    std::vector<Contribution> cs;
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < p.Ho; ++oh)
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                const int64_t o = oh * p.Wo + ow, w = pl * p.Ho * p.Wo + o;
                if (max) {
                    cs.push_back({pl * p.H * p.W + static_cast<int64_t>(in[1][w]), o, dy[w]});
                    continue;
                }
                const float g = dy[w] / div;  // one division per window
                for (int kh = 0; kh < p.kernel; ++kh)
                    for (int kw = 0; kw < p.kernel; ++kw) {
                        const int64_t ih = oh * p.stride - p.padding + kh;
                        const int64_t iw = ow * p.stride - p.padding + kw;
                        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                            cs.push_back({(pl * p.H + ih) * p.W + iw, o, g});
                    }
            }
    return cs;
}

/// The mode's recipe (kernels/pool2d.h) over the contributions: tree (and atomic at one thread)
/// adds them in order from +0; kahan the same order with a KahanSum per cell; exact this
/// file's own ExactAcc per cell, contributions in reverse (no order may matter); permuted the
/// windows in the key's order, one permutation for every plane, stable inside a window.
std::vector<float> recipe_of(int s, const std::vector<Contribution>& cs, AccumSpec spec) {
    const Pool2dParams& p = at(s);
    const int64_t n = in_size(p);
    std::vector<float> dx(static_cast<std::size_t>(n), 0.0f);
    switch (spec.mode) {
        case AccumMode::kTree:
        case AccumMode::kAtomic:
            for (const Contribution& k : cs) dx[k.cell] = dx[k.cell] + k.value;
            return dx;
        case AccumMode::kKahan: {
            std::vector<c::KahanSum> k(dx.size(), c::kahan_zero());
            for (const Contribution& t : cs) c::kahan_add(k[t.cell], t.value);
            for (int64_t i = 0; i < n; ++i) dx[i] = c::kahan_value(k[i]);
            return dx;
        }
        case AccumMode::kExact: {
            std::vector<c::ExactAcc> e(dx.size());
            for (c::ExactAcc& a : e) c::exact_init(a);
            for (auto it = cs.rbegin(); it != cs.rend(); ++it) c::exact_add(e[it->cell], it->value);
            for (int64_t i = 0; i < n; ++i) dx[i] = c::exact_value(e[i]);
            return dx;
        }
        case AccumMode::kPermuted: {
            const int64_t out = p.Ho * p.Wo;
            std::vector<uint32_t> order(static_cast<std::size_t>(out)), rank(order.size());
            c::permute_order(order.data(), out, spec.permute_key);
            for (int64_t k = 0; k < out; ++k) rank[order[k]] = static_cast<uint32_t>(k);
            std::vector<Contribution> sorted = cs;  // planes own distinct cells: windows suffice
            std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
                return rank[a.window] < rank[b.window];
            });
            for (const Contribution& k : sorted) dx[k.cell] = dx[k.cell] + k.value;
            return dx;
        }
    }
    return dx;
}

/// What both entries share: the shapes, inputs (max: dy, argmax; avg: dy), recipes, references,
/// bounds and which shapes each check uses.
ModesEntry pool_entry(const std::string& kernel, bool max) {
    ModesEntry e;
    e.kernel = kernel;
    for (const Pool2dParams& p : kShapes)
        e.shapes.push_back("x=(" + std::to_string(p.N) + "," + std::to_string(p.C) + "," +
                           std::to_string(p.H) + "," + std::to_string(p.W) +
                           ") k=" + std::to_string(p.kernel) + " s=" + std::to_string(p.stride) +
                           " pad=" + std::to_string(p.padding));
    e.inputs = [max](int s, uint32_t tag, Inputs kind) {
        Floats in{dy_input(s, tag + 1, kind)};
        if (max) in.push_back(argmax_input(s, tag, kind));
        return in;
    };
    e.recipe = [max](int s, const Floats& in, AccumSpec spec) {
        return Floats{recipe_of(s, contributions(s, in, max), spec)};
    };
    e.reference = [max](int s, const Floats& in, bool magnitudes) {
        const Pool2dParams& p = at(s);
        std::vector<double> dy(in[0].begin(), in[0].end());
        std::vector<double> dx(static_cast<std::size_t>(in_size(p)));
        if (magnitudes)
            for (double& v : dy) v = std::fabs(v);
        if (max) {
            const std::vector<int32_t> am(in[1].begin(), in[1].end());
            kernels::ref::maxpool2d_backward(dy.data(), am.data(), dx.data(), p);
        } else {
            kernels::ref::avgpool2d_backward(dy.data(), dx.data(), p);
        }
        return Doubles{dx};
    };
    // avg's contributions are rounded quotients: the Kahan check measures against their sums.
    e.ill_reference = [max](int s, const Floats& in) {
        std::vector<long double> sum(static_cast<std::size_t>(in_size(at(s))), 0.0L);
        for (const Contribution& k : contributions(s, in, max)) sum[k.cell] += k.value;
        return Doubles{std::vector<double>(sum.begin(), sum.end())};
    };
    e.bound = [max](int s, AccumMode) {
        return static_cast<double>(at(s).kernel * at(s).kernel) + (max ? 1 : 2);
    };
    e.terms = [](int s) { return static_cast<int64_t>(at(s).kernel) * at(s).kernel; };
    // Cells with at most two contributions (none; +0 + a; +0 + a + b == +0 + b + a) have the
    // same bits in any order.
    e.atomic_settled = [max](int s, const Floats& in) {
        Settled settled{std::vector<char>(static_cast<std::size_t>(in_size(at(s))), 1)};
        std::vector<int> count(settled[0].size(), 0);
        for (const Contribution& k : contributions(s, in, max))
            if (++count[k.cell] > 2) settled[0][k.cell] = 0;
        return settled;
    };
    e.mode_free = [max](int s) {
        return mode_free_on(s, max) ? std::vector<int>{0} : std::vector<int>{};
    };
    e.crosses_samples = false;  // true of pooling, though no SampleOrder shape asks
    e.thread_shapes = {4, 10};
    e.special_shapes = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, kSingle};
    e.ill_shape = 12;
    e.key_shape = 13;
    e.atomic_shapes = {14, 15, 16};
    return e;
}

}  // namespace

ModesEntry maxpool2d_backward_entry() {
    ModesEntry e = pool_entry("maxpool2d_backward", true);
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        Pool2dParams p = at(s);
        p.accum = spec;
        d.table().maxpool2d_backward(d.in(in[0]), d.in_i32(in[1]), d.out(in_size(p)), p);
    };
    return e;
}

ModesEntry avgpool2d_backward_entry() {
    ModesEntry e = pool_entry("avgpool2d_backward", false);
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        Pool2dParams p = at(s);
        p.accum = spec;
        d.table().avgpool2d_backward(d.in(in[0]), d.out(in_size(p)), p);
    };
    return e;
}

}  // namespace dt::test
