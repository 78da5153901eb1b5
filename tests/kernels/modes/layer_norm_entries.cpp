// SPDX-License-Identifier: MIT
// ln.stats and ln.grad (kernels/layer_norm.h: layer_norm_forward, layer_norm_backward) for the
// accumulation-mode tester. R sums a token's C features: leaf j < min(C, 32) folds features j,
// j + 32, ... from +0 in index order, the leaves combined as the mode says (atomic: as tree,
// nothing races in a row), or every term at once (exact). G sums a feature over the tokens: a
// leaf per sequence (its T tokens ascending), combined as the mode says. Forward: mean = R(x) /
// C, var = R((x - mean)^2) / C, rstd, y. Backward: dx from R(g) and R(g * xhat), g = dy * gamma;
// dbeta = G(dy), dgamma = G(dy * xhat); its mean and rstd are inputs, the exact recipe's stats
// of x (one value in every mode, so the terms are the same floats in every mode).
// Samples are the sequences. The forward sums within tokens only: permuting the sequences moves
// its outputs in every mode (crosses_samples = false). Where C = 1 no mode has a sum to order:
// every forward output, and dx, is mode-free there.
// Shapes: C = 1 (M = 1 and 5), odd C, 32 + a tail, M = 1 at GPT-2's C = 768; the thread shapes
// (above the parallel threshold, one with rows of 5000); the sample-order shapes (5 and 9
// sequences: the tester's order j -> 7j + 3 mod B reorders their leaves); the special shape
// (x spread by 4096 with subnormals and signed zeros; dy +-2^40 cancelling across sequences,
// values over 2^-60 .. 2^40, subnormals, signed zeros); the ill-conditioned shapes (below); the
// key shape; contention: 128 sequences (the backward's leaves race), and 2 (two leaves commute).
// Ill: forward x = +-(1000 + u), each row's first feature +-5e6 (its square opens leaf 0 of the
// variance, where the later terms lose bits unless compensated). Backward gamma = 1, dy = u plus,
// in each token, +-2^22 at feature j0 and -+2^22 at j1, with x[j1] = x[j0]: the row sums of g
// and g * xhat cancel the pair exactly, after leaves j0 % 32 and j1 % 32 dropped the small terms'
// bits; the columns collect +-2^22 from several tokens, so G is ill-conditioned too.
// Bounds: tests/support/layer_norm_bounds.h (the entries' `bounds`).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/layer_norm.h"
#include "kernels/ref/layer_norm_ref.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/layer_norm_bounds.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::LayerNormParams;
namespace c = kernels::common;
using Vec = std::vector<float>;
using VecD = std::vector<double>;

const std::vector<LayerNormParams> kForwardShapes = {
    {.M = 1, .C = 1, .T = 1},      {.M = 5, .C = 1, .T = 5},       {.M = 6, .C = 7, .T = 3},
    {.M = 10, .C = 33, .T = 5},    {.M = 1, .C = 768, .T = 1},  // 0, 1: C = 1
    {.M = 256, .C = 192, .T = 64}, {.M = 300, .C = 130, .T = 100}, {.M = 9, .C = 5000, .T = 3},
    {.M = 20, .C = 50, .T = 4},    {.M = 36, .C = 70, .T = 4},    // 5-7: threads, 8, 9: order
    {.M = 6, .C = 100, .T = 2},    {.M = 16, .C = 768, .T = 4},   // 10: special, 11: ill
    {.M = 8, .C = 768, .T = 4},    {.M = 512, .C = 64, .T = 4}};  // 12: key, 13: atomic
const std::vector<LayerNormParams> kBackwardShapes = {
    {.M = 1, .C = 1, .T = 1},       {.M = 6, .C = 1, .T = 3},      {.M = 6, .C = 7, .T = 3},
    {.M = 10, .C = 33, .T = 2},     {.M = 2, .C = 768, .T = 1},  // 0, 1: C = 1
    {.M = 256, .C = 192, .T = 64},  {.M = 300, .C = 130, .T = 20}, {.M = 9, .C = 5000, .T = 3},
    {.M = 20, .C = 50, .T = 4},     {.M = 27, .C = 70, .T = 3},    // 5-7: threads, 8, 9: order
    {.M = 12, .C = 100, .T = 2},    {.M = 128, .C = 64, .T = 16},  // 10: special, 11: ill
    {.M = 36, .C = 64, .T = 4},     {.M = 1024, .C = 64, .T = 8},  // 12: key, 13, 14: atomic
    {.M = 2048, .C = 32, .T = 1024}};

int64_t numel(const LayerNormParams& p) { return p.M * p.C; }
int64_t sequences(const LayerNormParams& p) { return p.M / p.T; }

// ---- the recipes, written plainly ----

/// R of term(i), i < C, in the mode (kernels/layer_norm.h): leaves i % 32, from +0 (kahan: from
/// (+0, +0)) in index order; tree and atomic: their tree; kahan: the kahan tree; permuted: the
/// key's order over the leaves from +0; exact: every term (here in reverse: it has no order).
template <class Term>
float row_total(int64_t C, AccumSpec spec, Term term) {
    const auto L = static_cast<std::size_t>(std::min<int64_t>(C, 32));
    if (spec.mode == AccumMode::kExact) {
        c::ExactAcc a;
        c::exact_init(a);
        for (int64_t i = C - 1; i >= 0; --i) c::exact_add(a, term(i));
        return c::exact_value(a);
    }
    if (spec.mode == AccumMode::kKahan) {
        std::vector<c::KahanSum> leaves(L, c::kahan_zero());
        for (int64_t i = 0; i < C; ++i) c::kahan_add(leaves[i % 32], term(i));
        return c::kahan_value(c::kahan_tree_combine(leaves.data(), static_cast<int64_t>(L)));
    }
    Vec leaves(L, 0.0f);
    for (int64_t i = 0; i < C; ++i) leaves[i % 32] = leaves[i % 32] + term(i);
    if (spec.mode != AccumMode::kPermuted)
        return c::reduce_tree_combine(leaves.data(), static_cast<int64_t>(L));
    std::vector<uint32_t> order(L);
    c::permute_order(order.data(), static_cast<int64_t>(L), spec.permute_key);
    float acc = 0.0f;
    for (uint32_t j : order) acc = acc + leaves[j];
    return acc;
}

/// G of term(m), m < M, in the mode: a leaf per sequence over its tokens ascending from +0
/// (kahan: (+0, +0)); tree: their tree; kahan: the kahan tree; permuted: the key's order over
/// the sequences from +0; atomic at one thread: in sequence order from +0; exact: every term.
template <class Term>
float grad_total(const LayerNormParams& p, AccumSpec spec, Term term) {
    const auto B = static_cast<std::size_t>(sequences(p));
    if (spec.mode == AccumMode::kExact) {
        c::ExactAcc a;
        c::exact_init(a);
        for (int64_t m = p.M - 1; m >= 0; --m) c::exact_add(a, term(m));
        return c::exact_value(a);
    }
    if (spec.mode == AccumMode::kKahan) {
        std::vector<c::KahanSum> leaves(B, c::kahan_zero());
        for (int64_t m = 0; m < p.M; ++m) c::kahan_add(leaves[m / p.T], term(m));
        return c::kahan_value(c::kahan_tree_combine(leaves.data(), static_cast<int64_t>(B)));
    }
    Vec leaves(B, 0.0f);
    for (int64_t m = 0; m < p.M; ++m) leaves[m / p.T] = leaves[m / p.T] + term(m);
    if (spec.mode == AccumMode::kTree)
        return c::reduce_tree_combine(leaves.data(), static_cast<int64_t>(B));
    std::vector<uint32_t> order(B);
    std::iota(order.begin(), order.end(), 0u);
    if (spec.mode == AccumMode::kPermuted)
        c::permute_order(order.data(), static_cast<int64_t>(B), spec.permute_key);
    float acc = 0.0f;
    for (uint32_t b : order) acc = acc + leaves[b];
    return acc;
}

/// y, mean, rstd in the mode.
Floats forward_recipe(const LayerNormParams& p, const Floats& in, AccumSpec spec) {
    const Vec &x = in[0], &gamma = in[1], &beta = in[2];
    const float count = static_cast<float>(p.C);
    Vec y(x.size()), mean(static_cast<std::size_t>(p.M)), rstd(mean.size());
    for (int64_t m = 0; m < p.M; ++m) {
        const float* xr = x.data() + m * p.C;
        const float mu = row_total(p.C, spec, [&](int64_t i) { return xr[i]; }) / count;
        const float var = row_total(p.C, spec,
                                    [&](int64_t i) {
                                        const float d = xr[i] - mu;
                                        return d * d;
                                    }) /
                          count;
        const float rs = 1.0f / std::sqrt(var + p.eps);
        mean[m] = mu, rstd[m] = rs;
        for (int64_t i = 0; i < p.C; ++i) y[m * p.C + i] = ((xr[i] - mu) * rs) * gamma[i] + beta[i];
    }
    return Floats{y, mean, rstd};
}

/// dx, dgamma, dbeta in the mode.
Floats backward_recipe(const LayerNormParams& p, const Floats& in, AccumSpec spec) {
    const Vec &dy = in[0], &x = in[1], &mean = in[2], &rstd = in[3], &gamma = in[4];
    const float count = static_cast<float>(p.C);
    const auto xhat = [&](int64_t m, int64_t i) { return (x[m * p.C + i] - mean[m]) * rstd[m]; };
    Vec dx(dy.size()), dg(static_cast<std::size_t>(p.C)), db(dg.size());
    for (int64_t m = 0; m < p.M; ++m) {
        const auto g = [&](int64_t i) { return dy[m * p.C + i] * gamma[i]; };
        const float m1 = row_total(p.C, spec, g) / count;
        const float m2 = row_total(p.C, spec, [&](int64_t i) { return g(i) * xhat(m, i); }) / count;
        for (int64_t i = 0; i < p.C; ++i)
            dx[m * p.C + i] = rstd[m] * ((g(i) - m1) - xhat(m, i) * m2);
    }
    for (int64_t ch = 0; ch < p.C; ++ch) {
        db[ch] = grad_total(p, spec, [&](int64_t m) { return dy[m * p.C + ch]; });
        dg[ch] = grad_total(p, spec, [&](int64_t m) { return dy[m * p.C + ch] * xhat(m, ch); });
    }
    return Floats{dx, dg, db};
}

// ---- inputs ----

/// x: uniform in [-2, 2) plus 0.75 per token (the variance's second pass matters); ill:
/// +-(1000 + u / 2), signs random, each row's feature 0 +-5e6 by the row's parity; special:
/// every fifth feature times 4096, every seventh a subnormal, every eleventh a signed zero.
Vec x_of(const LayerNormParams& p, uint32_t tag, Inputs kind) {
    Vec x = uniform_floats(numel(p), -2, 2, test_seed(), tag);
    const Vec w = uniform_floats(numel(p), -1, 1, test_seed(), tag + 1);
    for (int64_t k = 0; k < numel(p); ++k) {
        const int64_t m = k / p.C, i = k % p.C;
        if (kind == Inputs::kIll) {
            x[k] = (w[k] < 0.0f ? -1.0f : 1.0f) * (1000.0f + x[k] / 2);
            if (i == 0) x[k] = (m % 2) ? -5e6f : 5e6f;
            continue;
        }
        x[k] = x[k] + 0.75f * static_cast<float>(m % 5);
        if (kind != Inputs::kSpecial) continue;
        if (i % 5 == 4) x[k] = x[k] * 4096.0f;
        if (i % 7 == 2) x[k] = 1e-40f * w[k];
        if (i % 11 == 3) x[k] = (k % 2) ? -0.0f : 0.0f;
    }
    return x;
}

/// The ill backward's pair of features of token m: j0 = 5m mod C, j1 = j0 + C / 2 mod C.
std::pair<int64_t, int64_t> ill_pair(const LayerNormParams& p, int64_t m) {
    const int64_t j0 = (5 * m) % p.C;
    return {j0, (j0 + p.C / 2) % p.C};
}

/// dy: uniform in [-1, 1); ill: u plus the +-2^22 pair (header comment); special: by feature,
/// +-2^40 by the sequence's parity (cancelling across sequences), values over 2^-60 .. 2^40,
/// subnormals, signed zeros (later rules win).
Vec dy_of(const LayerNormParams& p, uint32_t tag, Inputs kind) {
    Vec dy = uniform_floats(numel(p), -1, 1, test_seed(), tag + 2);
    const Vec w = uniform_floats(numel(p), -1, 1, test_seed(), tag + 1);
    for (int64_t k = 0; kind == Inputs::kSpecial && k < numel(p); ++k) {
        const int64_t seq = k / p.C / p.T, i = k % p.C;
        if (i % 5 == 0) dy[k] = (seq % 2 ? -1.0f : 1.0f) * 1099511627776.0f;
        if (i % 5 == 1) dy[k] = std::ldexp(w[k], static_cast<int>(k % 100) - 60);
        if (i % 7 == 2) dy[k] = 1e-40f * w[k];
        if (i % 11 == 3) dy[k] = (k % 2) ? -0.0f : 0.0f;
    }
    for (int64_t m = 0; kind == Inputs::kIll && m < p.M; ++m) {
        const auto [j0, j1] = ill_pair(p, m);
        const float big = (m % 2 ? -1.0f : 1.0f) * 4194304.0f;
        dy[m * p.C + j0] = big, dy[m * p.C + j1] = -big;
    }
    return dy;
}

/// The rows (blocks of `per` floats per token) of v with sequence j taken from order[j].
Vec sequences_in(const Vec& v, const LayerNormParams& p, int64_t per,
                 const std::vector<int64_t>& order) {
    const int64_t block = p.T * per;
    Vec moved(v.size());
    for (std::size_t j = 0; j < order.size(); ++j)
        std::copy_n(v.begin() + order[j] * block, block,
                    moved.begin() + static_cast<int64_t>(j) * block);
    return moved;
}

std::string describe(const LayerNormParams& p) {
    return "M=" + std::to_string(p.M) + " C=" + std::to_string(p.C) + " T=" + std::to_string(p.T);
}

/// What both entries share: the shapes and which checks use them, samples (sequences).
ModesEntry ln_entry(const std::string& kernel, const std::vector<LayerNormParams>& shapes) {
    ModesEntry e;
    e.kernel = kernel;
    for (const LayerNormParams& p : shapes) e.shapes.push_back(describe(p));
    e.samples = [&shapes](int s) { return sequences(shapes[static_cast<std::size_t>(s)]); };
    e.thread_shapes = {5, 6, 7};
    e.order_shapes = {2, 8, 9};
    e.special_shapes = {10};
    e.ill_shape = 11;
    e.key_shape = 12;
    return e;
}

const LayerNormParams& fwd(int s) { return kForwardShapes[static_cast<std::size_t>(s)]; }
const LayerNormParams& bwd(int s) { return kBackwardShapes[static_cast<std::size_t>(s)]; }

}  // namespace

ModesEntry layer_norm_forward_entry() {
    ModesEntry e = ln_entry("layer_norm_forward", kForwardShapes);
    e.crosses_samples = false;
    e.atomic_shapes = {13};
    e.terms = [](int s) { return fwd(s).C; };
    e.inputs = [](int s, uint32_t tag, Inputs kind) {
        const LayerNormParams& p = fwd(s);
        return Floats{x_of(p, tag, kind), uniform_floats(p.C, 0.5f, 1.5f, test_seed(), tag + 3),
                      uniform_floats(p.C, -1.0f, 1.0f, test_seed(), tag + 4)};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        LayerNormParams p = fwd(s);
        p.accum = spec;
        const float *x = d.in(in[0]), *gamma = d.in(in[1]), *beta = d.in(in[2]);
        float* y = d.out(numel(p));  // asked in the outputs' order: y, mean, rstd
        float* mean = d.out(p.M);
        float* rstd = d.out(p.M);
        d.table().layer_norm_forward(x, gamma, beta, y, mean, rstd, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        return forward_recipe(fwd(s), in, spec);
    };
    // Magnitudes: y the first-order terms of its bound; mean sum|x| / C; rstd the variance's
    // carried through 1 / sqrt(var + eps) (var's terms are >= 0: var itself).
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const LayerNormParams& p = fwd(s);
        const VecD x = to_double(in[0]), g = to_double(in[1]), b = to_double(in[2]);
        VecD y(x.size()), mean(static_cast<std::size_t>(p.M)), rstd(mean.size());
        kernels::ref::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(),
                                         rstd.data(), p);
        if (!magnitudes) return Doubles{y, mean, rstd};
        const LayerNormForwardBounds unit = layer_norm_forward_bounds(p, 1, x, g, b, mean, rstd);
        for (std::size_t k = 0; k < y.size(); ++k) y[k] = unit.y[k] / kEps32;
        for (std::size_t m = 0; m < mean.size(); ++m)
            mean[m] = unit.mean[m] / kEps32, rstd[m] = unit.rstd[m] / kEps32;
        return Doubles{y, mean, rstd};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {
        const LayerNormParams& p = fwd(s);
        const VecD x = to_double(in[0]), g = to_double(in[1]), b = to_double(in[2]);
        VecD y(x.size()), mean(static_cast<std::size_t>(p.M)), rstd(mean.size());
        kernels::ref::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(),
                                         rstd.data(), p);
        LayerNormForwardBounds bd =
            layer_norm_forward_bounds(p, layer_norm_row_terms(p.C, m), x, g, b, mean, rstd);
        return Doubles{std::move(bd.y), std::move(bd.mean), std::move(bd.rstd)};
    };
    // Kahan: the long-double sums of kahan's own float terms (the variance's with its own mean),
    // rounded once and put through the kernel's float formulas: what a correctly rounded sum
    // gives. y, no sum of its own, is left out (its roundings exceed Neumaier's eps |S|).
    e.ill_reference = [](int s, const Floats& in) {
        const LayerNormParams& p = fwd(s);
        const Floats kahan = forward_recipe(p, in, c::accum_spec(AccumMode::kKahan));
        const float count = static_cast<float>(p.C);
        Doubles want{VecD(), VecD(static_cast<std::size_t>(p.M)),
                     VecD(static_cast<std::size_t>(p.M))};
        for (int64_t m = 0; m < p.M; ++m) {
            long double sx = 0, sv = 0;
            for (int64_t i = 0; i < p.C; ++i) {
                const float xi = in[0][m * p.C + i], d = xi - kahan[1][m];
                sx += xi, sv += d * d;
            }
            want[1][m] = static_cast<float>(sx) / count;
            want[2][m] = 1.0f / std::sqrt(static_cast<float>(sv) / count + p.eps);
        }
        return want;
    };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        return Floats{sequences_in(in[0], fwd(s), fwd(s).C, order), in[1], in[2]};
    };
    e.permuted = [](int s, const Floats& out, const std::vector<int64_t>& order) {
        const LayerNormParams& p = fwd(s);
        return Floats{sequences_in(out[0], p, p.C, order), sequences_in(out[1], p, 1, order),
                      sequences_in(out[2], p, 1, order)};
    };
    // Atomic is tree here (a row is one thread's or warp's): every element settled.
    e.atomic_settled = [](int s, const Floats& in) {
        return settled_all(Floats{in[0], Vec(static_cast<std::size_t>(fwd(s).M)),
                                  Vec(static_cast<std::size_t>(fwd(s).M))},
                           true);
    };
    e.mode_free = [](int s) {
        return fwd(s).C == 1 ? std::vector<int>{0, 1, 2} : std::vector<int>{};
    };
    return e;
}

ModesEntry layer_norm_backward_entry() {
    ModesEntry e = ln_entry("layer_norm_backward", kBackwardShapes);
    e.atomic_shapes = {13, 14};
    e.terms = [](int s) { return std::max(bwd(s).C, bwd(s).M); };
    // dy, x, mean, rstd, gamma; mean and rstd the exact recipe's of x. Ill: x[j1] = x[j0], gamma 1.
    e.inputs = [](int s, uint32_t tag, Inputs kind) {
        const LayerNormParams& p = bwd(s);
        Vec x = x_of(p, tag, kind == Inputs::kIll ? Inputs::kUniform : kind);
        for (int64_t m = 0; kind == Inputs::kIll && m < p.M; ++m) {
            const auto [j0, j1] = ill_pair(p, m);
            x[m * p.C + j1] = x[m * p.C + j0];
        }
        Vec gamma = kind == Inputs::kIll ? Vec(static_cast<std::size_t>(p.C), 1.0f)
                                         : uniform_floats(p.C, 0.5f, 1.5f, test_seed(), tag + 3);
        const Floats stats = forward_recipe(p, Floats{x, gamma, Vec(gamma.size())},
                                            c::accum_spec(AccumMode::kExact));
        return Floats{dy_of(p, tag, kind), std::move(x), stats[1], stats[2], std::move(gamma)};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        LayerNormParams p = bwd(s);
        p.accum = spec;
        const float *dy = d.in(in[0]), *x = d.in(in[1]), *mean = d.in(in[2]), *rstd = d.in(in[3]),
                    *gamma = d.in(in[4]);
        float* dx = d.out(numel(p));  // asked in the outputs' order: dx, dgamma, dbeta
        float* dgamma = d.out(p.C);
        float* dbeta = d.out(p.C);
        d.table().layer_norm_backward(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        return backward_recipe(bwd(s), in, spec);
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const LayerNormParams& p = bwd(s);
        if (magnitudes) return layer_norm_backward_scaled(p, in[0], in[1], in[2], in[3], in[4], {});
        const VecD dy = to_double(in[0]), x = to_double(in[1]), mean = to_double(in[2]),
                   rstd = to_double(in[3]), gamma = to_double(in[4]);
        VecD dx(dy.size()), dg(gamma.size()), db(gamma.size());
        kernels::ref::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(),
                                          gamma.data(), dx.data(), dg.data(), db.data(), p);
        return Doubles{dx, dg, db};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {
        const LayerNormParams& p = bwd(s);
        return layer_norm_backward_scaled(p, in[0], in[1], in[2], in[3], in[4],
                                          layer_norm_backward_bound_scales(p, m));
    };
    // Kahan: the long-double sums of the kernel's float terms (g, g * xhat per row; dy, dy * xhat
    // per feature); dx, no sum of its own, the kernel's float formula on its row's sums rounded
    // once: only what the sums' errors carry into it is counted, not its own roundings.
    e.ill_reference = [](int s, const Floats& in) {
        const LayerNormParams& p = bwd(s);
        const Vec &dy = in[0], &x = in[1], &mean = in[2], &rstd = in[3], &gamma = in[4];
        const float count = static_cast<float>(p.C);
        const auto xhat = [&](int64_t m, int64_t i) {
            return (x[m * p.C + i] - mean[m]) * rstd[m];
        };
        Doubles want{VecD(dy.size()), VecD(gamma.size()), VecD(gamma.size())};
        std::vector<long double> sg(gamma.size()), sb(gamma.size());
        for (int64_t m = 0; m < p.M; ++m) {
            long double s1 = 0, s2 = 0;
            for (int64_t i = 0; i < p.C; ++i) {
                const float g = dy[m * p.C + i] * gamma[i];
                s1 += g, s2 += g * xhat(m, i);
                sb[i] += dy[m * p.C + i], sg[i] += dy[m * p.C + i] * xhat(m, i);
            }
            const float m1 = static_cast<float>(s1) / count, m2 = static_cast<float>(s2) / count;
            for (int64_t i = 0; i < p.C; ++i) {
                const float g = dy[m * p.C + i] * gamma[i];
                want[0][m * p.C + i] = rstd[m] * ((g - m1) - xhat(m, i) * m2);
            }
        }
        for (std::size_t i = 0; i < sg.size(); ++i)
            want[1][i] = static_cast<double>(sg[i]), want[2][i] = static_cast<double>(sb[i]);
        return want;
    };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        const LayerNormParams& p = bwd(s);
        return Floats{sequences_in(in[0], p, p.C, order), sequences_in(in[1], p, p.C, order),
                      sequences_in(in[2], p, 1, order), sequences_in(in[3], p, 1, order), in[4]};
    };
    e.permuted = [](int s, const Floats& out, const std::vector<int64_t>& order) {
        return Floats{sequences_in(out[0], bwd(s), bwd(s).C, order), out[1], out[2]};
    };
    // dx's row sums are tree's in the atomic mode: always settled; dgamma and dbeta where at most
    // two leaves (sequences) meet, which commute.
    e.atomic_settled = [](int s, const Floats& in) {
        Settled settled = settled_all({in[0], in[4], in[4]}, sequences(bwd(s)) <= 2);
        settled[0].assign(settled[0].size(), 1);
        return settled;
    };
    e.mode_free = [](int s) { return bwd(s).C == 1 ? std::vector<int>{0} : std::vector<int>{}; };
    return e;
}

}  // namespace dt::test
