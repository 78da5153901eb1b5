// SPDX-License-Identifier: MIT
// bn.stats and bn.backward (kernels/batchnorm2d.h: batchnorm2d_stats, batchnorm2d_backward) for
// the accumulation-mode tester. Every total(c) sums term(n, c, i) over the samples n and the
// positions i < HW: a leaf per sample (its HW terms in index order) combined as the mode says,
// or every term at once (exact). Stats: mean = total(x) / count, then var = total((x - mean)^2) /
// count, then invstd. Backward (training): dbeta = total(dy), dgamma = total(dy * xhat), then dx
// from both; its mean and invstd are inputs, the exact recipe's stats of x (one value in every
// mode, so the terms are the same floats in every mode).
// Shapes (those of cpu/batchnorm2d_modes_test.cpp, which this replaces): tiny, odd, block
// tails, HW above kExactBinsMin, above the parallel threshold; then the thread shapes (4, 6, 7),
// the sample-order shapes (4, 8, 9; 9 had N = 4, but the tester's order j -> 7j + 3 mod 4
// reverses 4 samples, which leaves a balanced tree's bits as they are: N = 5), the special
// shape (dy: +-2^40 cancelling across samples, values over 2^-60 .. 2^40, subnormals, signed
// zeros; x spread by 4096), the ill-conditioned (x, dy = +-(1000 + u)), key and contention
// shapes (128 samples: the leaves race; 2 samples: two leaves per total, which commute).
// Bounds (tests/support/batchnorm_bounds.h), for L terms per total: L = HW + 2 + ceil(log2 N)
// for tree, kahan and exact, HW + N + 2 for permuted and atomic (N leaves in any order):
//   stats     batchnorm_bounds(L): mean L * eps32 * sum|x| / count; var and invstd that error
//             carried on, plus their roundings (no one c fits them: the entry's `bounds`);
//   backward  B_dbeta = L * eps32 * sum|dy|; B_dgamma = (L + 3) * eps32 * sum|dy * xhat|
//             (batchnorm_bounds' with mean and invstd exact, as they are inputs here); dx, held
//             to no bound there, |k| * (B_dbeta + |xhat| * B_dgamma + 4 * eps32 * (count * |dy| +
//             sum|dy| + |xhat| * sum|dy * xhat|)), k = gamma * invstd / count: the totals'
//             errors carried through dx's formula, and its own nine roundings.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/ref/batchnorm2d_ref.h"
#include "tests/kernels/modes/entry_helpers.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/batchnorm_bounds.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::BatchNorm2dParams;
namespace c = kernels::common;
using Vec = std::vector<float>;
using VecD = std::vector<double>;

const std::vector<BatchNorm2dParams> kShapes = {
    {.N = 2, .C = 1, .HW = 1},    {.N = 3, .C = 5, .HW = 7},      {.N = 13, .C = 3, .HW = 25},
    {.N = 3, .C = 2, .HW = 4500}, {.N = 37, .C = 16, .HW = 196},  {.N = 64, .C = 9, .HW = 64},
    {.N = 5, .C = 3, .HW = 4500}, {.N = 300, .C = 130, .HW = 1},   // 4, 6, 7: threads
    {.N = 9, .C = 3, .HW = 25},   {.N = 5, .C = 2, .HW = 4500},    // 4, 8, 9: sample order
    {.N = 6, .C = 3, .HW = 50},   {.N = 64, .C = 8, .HW = 196},    // 10: special, 11: ill
    {.N = 37, .C = 16, .HW = 49}, {.N = 128, .C = 16, .HW = 196},  // 12: key, 13, 14: atomic
    {.N = 2, .C = 16, .HW = 1024}};
const BatchNorm2dParams& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }
int64_t numel(const BatchNorm2dParams& p) { return p.N * p.C * p.HW; }
int64_t channel_of(const BatchNorm2dParams& p, int64_t k) { return k / p.HW % p.C; }

/// x: uniform in [-2, 2) plus 0.5 per channel index (the variance's second pass then matters);
/// ill: +-(1000 + u), signs random; special: every fifth position of a row times 4096.
Vec x_of(const BatchNorm2dParams& p, uint32_t tag, Inputs kind) {
    const int64_t n = numel(p);
    Vec x = uniform_floats(n, -2, 2, test_seed(), tag);
    const Vec w = uniform_floats(n, -1, 1, test_seed(), tag + 1);  // ill: the signs
    for (int64_t k = 0; k < n; ++k) {
        if (kind == Inputs::kIll) {
            x[k] = (w[k] < 0.0f ? -1.0f : 1.0f) * (1000.0f + x[k] / 2);
            continue;
        }
        x[k] = x[k] + 0.5f * static_cast<float>(channel_of(p, k));
        if (kind == Inputs::kSpecial && k % p.HW % 5 == 4) x[k] = x[k] * 4096.0f;
    }
    return x;
}

/// dy: uniform in [-1, 1); ill: +-(1000 + w) (x's sign draw), signs alternating every three
/// elements; special: in each row, by position, +-2^40 by the sample's parity (pairs cancelling
/// across samples), values over 2^-60 .. 2^40, subnormals, signed zeros (later rules win).
Vec dy_of(const BatchNorm2dParams& p, uint32_t tag, Inputs kind) {
    const int64_t n = numel(p);
    Vec dy = uniform_floats(n, -1, 1, test_seed(), tag + 2);
    const Vec w = uniform_floats(n, -1, 1, test_seed(), tag + 1);
    for (int64_t k = 0; kind != Inputs::kUniform && k < n; ++k) {
        const int64_t sample = k / (p.C * p.HW), i = k % p.HW;
        if (kind == Inputs::kIll) {
            dy[k] = ((k / 3) % 2 ? -1.0f : 1.0f) * (1000.0f + w[k]);
            continue;
        }
        if (i % 5 == 0) dy[k] = (sample % 2 ? -1.0f : 1.0f) * 1099511627776.0f;
        if (i % 5 == 1) dy[k] = std::ldexp(w[k], static_cast<int>(k % 100) - 60);
        if (i % 7 == 2) dy[k] = 1e-40f * w[k];
        if (i % 11 == 3) dy[k] = (k % 2) ? -0.0f : 0.0f;
    }
    return dy;
}

/// total(c) of term(k), k = (n * C + c) * HW + i, as the mode's recipe (kernels/batchnorm2d.h):
/// leaves of HW terms from +0 in index order (kahan: kahan_add from (+0, +0)); tree, their
/// pairwise tree; kahan, the kahan tree; permuted, the leaves in the key's order from +0; atomic
/// at one thread, in sample order from +0; exact, every term (here in reverse: it has no order).
template <class Term>
float total(const BatchNorm2dParams& p, AccumSpec spec, int64_t ch, Term term) {
    const auto t = [&](int64_t n, int64_t i) { return term((n * p.C + ch) * p.HW + i); };
    const auto N = static_cast<std::size_t>(p.N);
    if (spec.mode == AccumMode::kExact) {
        c::ExactAcc a;
        c::exact_init(a);
        for (int64_t n = p.N - 1; n >= 0; --n)
            for (int64_t i = p.HW - 1; i >= 0; --i) c::exact_add(a, t(n, i));
        return c::exact_value(a);
    }
    if (spec.mode == AccumMode::kKahan) {
        std::vector<c::KahanSum> leaves(N, c::kahan_zero());
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t i = 0; i < p.HW; ++i) c::kahan_add(leaves[n], t(n, i));
        return c::kahan_value(c::kahan_tree_combine(leaves.data(), p.N));
    }
    Vec leaves(N, 0.0f);
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t i = 0; i < p.HW; ++i) leaves[n] = leaves[n] + t(n, i);
    return combine_leaves(leaves, spec);  // tree, permuted, atomic
}

/// mean, var, invstd in the mode (the second pass's terms with this mode's own mean).
Floats stats_recipe(const BatchNorm2dParams& p, const Vec& x, AccumSpec spec) {
    const float count = kernels::batchnorm2d_count(p);
    Floats out(3, Vec(static_cast<std::size_t>(p.C)));
    for (int64_t ch = 0; ch < p.C; ++ch) {
        const float m = total(p, spec, ch, [&](int64_t k) { return x[k]; }) / count;
        const auto square = [&](int64_t k) {
            const float d = x[k] - m;
            return d * d;
        };
        const float v = total(p, spec, ch, square) / count;
        out[0][ch] = m, out[1][ch] = v, out[2][ch] = 1.0f / std::sqrt(v + p.eps);
    }
    return out;
}

/// dx, dgamma, dbeta in the mode: the totals of dy and of dy * xhat, xhat = (x - mean) * invstd,
/// then dx = k * (((count * dy) - dbeta) - xhat * dgamma), k = (gamma * invstd) / count.
Floats backward_recipe(const BatchNorm2dParams& p, const Floats& in, AccumSpec spec) {
    const Vec &dy = in[0], &x = in[1], &mean = in[2], &invstd = in[3], &gamma = in[4];
    const float count = kernels::batchnorm2d_count(p);
    Vec dx(dy.size()), dg(static_cast<std::size_t>(p.C)), db(dg.size());
    for (int64_t ch = 0; ch < p.C; ++ch) {
        const float m = mean[ch], is = invstd[ch], k = (gamma[ch] * is) / count;
        const auto xhat = [&](int64_t e) { return (x[e] - m) * is; };
        db[ch] = total(p, spec, ch, [&](int64_t e) { return dy[e]; });
        dg[ch] = total(p, spec, ch, [&](int64_t e) { return dy[e] * xhat(e); });
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t i = 0; i < p.HW; ++i) {
                const int64_t e = (n * p.C + ch) * p.HW + i;
                dx[e] = k * (((count * dy[e]) - db[ch]) - xhat(e) * dg[ch]);
            }
    }
    return Floats{dx, dg, db};
}

/// L, the terms per total of the bounds (header comment).
double terms_per_total(const BatchNorm2dParams& p, AccumMode m) {
    const bool any_order = m == AccumMode::kPermuted || m == AccumMode::kAtomic;
    const auto N = static_cast<double>(p.N);
    return static_cast<double>(p.HW) + 2 + (any_order ? N : std::ceil(std::log2(N)));
}

/// The double reference statistics of x.
struct StatsRef {
    VecD x, mean, var, invstd;
};
StatsRef stats_ref(const BatchNorm2dParams& p, const Vec& x) {
    const auto C = static_cast<std::size_t>(p.C);
    StatsRef r{to_double(x), VecD(C), VecD(C), VecD(C)};
    kernels::ref::batchnorm2d_stats(r.x.data(), r.mean.data(), r.var.data(), r.invstd.data(), p);
    return r;
}

/// Per-element sums of the backward, scaled: dbeta cb * sum|dy|, dgamma cg * sum|dy * xhat|,
/// dx |k| * ((cb + cc) * sum|dy| + |xhat| * (cg + cc) * sum|dy * xhat| + cc * count * |dy|)
/// (the bounds: cb = L * eps32, cg = (L + 3) * eps32, cc = 4 * eps32; the magnitudes: all 1).
Doubles backward_scaled(const BatchNorm2dParams& p, const Floats& in, double cb, double cg,
                        double cc) {
    const Vec &dy = in[0], &x = in[1], &mean = in[2], &invstd = in[3], &gamma = in[4];
    const double count = static_cast<double>(p.N * p.HW);
    const auto xhat = [&](int64_t k) {
        const int64_t ch = channel_of(p, k);
        return std::fabs((static_cast<double>(x[k]) - mean[ch]) * invstd[ch]);
    };
    VecD dx(dy.size()), dg(static_cast<std::size_t>(p.C)), db(dg.size());
    for (int64_t k = 0; k < numel(p); ++k) {
        db[channel_of(p, k)] += std::fabs(static_cast<double>(dy[k]));
        dg[channel_of(p, k)] += std::fabs(static_cast<double>(dy[k])) * xhat(k);
    }
    for (int64_t k = 0; k < numel(p); ++k) {
        const int64_t ch = channel_of(p, k);
        const double kk = std::fabs(static_cast<double>(gamma[ch]) * invstd[ch] / count);
        dx[k] = kk * ((cb + cc) * db[ch] + xhat(k) * (cg + cc) * dg[ch] +
                      cc * count * std::fabs(static_cast<double>(dy[k])));
    }
    for (std::size_t ch = 0; ch < db.size(); ++ch) db[ch] *= cb, dg[ch] *= cg;
    return Doubles{dx, dg, db};
}

/// What both entries share: the shapes and which checks use them, samples, atomic's settled
/// elements (two leaves per total commute).
ModesEntry bn_entry(const std::string& kernel) {
    ModesEntry e;
    e.kernel = kernel;
    for (const BatchNorm2dParams& p : kShapes)
        e.shapes.push_back("N=" + std::to_string(p.N) + " C=" + std::to_string(p.C) +
                           " HW=" + std::to_string(p.HW));
    e.terms = [](int s) { return at(s).N * at(s).HW; };
    e.samples = [](int s) { return at(s).N; };
    e.thread_shapes = {4, 6, 7};
    e.order_shapes = {4, 8, 9};
    e.special_shapes = {10};
    e.ill_shape = 11;
    e.key_shape = 12;
    e.atomic_shapes = {13, 14};
    return e;
}

}  // namespace

ModesEntry batchnorm2d_stats_entry() {
    ModesEntry e = bn_entry("batchnorm2d_stats");
    // Ill: also each row's first x +-5e6 by the sample's parity (pairs cancelling in the mean):
    // its square, in [2^44, 2^45), opens the variance's leaf, where each later term (about 1e6,
    // under half its ulp 2^21) rounds away unless compensated. Without it the variance's terms
    // (all >= 0) are well conditioned: tree's var and invstd mostly kahan's bits (some seeds: all).
    e.inputs = [](int s, uint32_t tag, Inputs kind) {
        const BatchNorm2dParams& p = at(s);
        Vec x = x_of(p, tag, kind);
        for (int64_t r = 0; kind == Inputs::kIll && r < p.N * p.C; ++r)
            x[r * p.HW] = (r / p.C % 2) ? -5e6f : 5e6f;
        return Floats{x};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        BatchNorm2dParams p = at(s);
        p.accum = spec;
        const float* x = d.in(in[0]);
        float* mean = d.out(p.C);  // asked in the outputs' order: mean, var, invstd
        float* var = d.out(p.C);
        float* invstd = d.out(p.C);
        d.table().batchnorm2d_stats(x, mean, var, invstd, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        return stats_recipe(at(s), in[0], spec);
    };
    // Magnitudes: sum|x| / count; var's terms are >= 0 (var itself); invstd's the variance's
    // carried through 1 / sqrt(var + eps) to first order.
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const BatchNorm2dParams& p = at(s);
        StatsRef r = stats_ref(p, in[0]);
        if (!magnitudes) return Doubles{r.mean, r.var, r.invstd};
        VecD mag(r.mean.size());
        for (int64_t k = 0; k < numel(p); ++k) mag[channel_of(p, k)] += std::fabs(r.x[k]);
        for (std::size_t ch = 0; ch < mag.size(); ++ch) {
            mag[ch] /= static_cast<double>(p.N * p.HW);
            r.invstd[ch] *= 0.5 * r.var[ch] / (r.var[ch] + p.eps);
        }
        return Doubles{mag, r.var, r.invstd};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {
        const BatchNorm2dParams& p = at(s);
        const StatsRef r = stats_ref(p, in[0]);
        const BatchNormBounds b = batchnorm_bounds(p, terms_per_total(p, m), r.x, VecD(r.x.size()),
                                                   r.mean, r.var, r.invstd);
        return Doubles{b.mean, b.var, b.invstd};
    };
    // Kahan: long-double sums of kahan's own terms (its variance's: with its own mean), then the
    // formulas in long double.
    e.ill_reference = [](int s, const Floats& in) {
        const BatchNorm2dParams& p = at(s);
        const Floats kahan = stats_recipe(p, in[0], c::accum_spec(AccumMode::kKahan));
        std::vector<long double> sx(static_cast<std::size_t>(p.C)), sv(sx.size());
        for (int64_t k = 0; k < numel(p); ++k) {
            const int64_t ch = channel_of(p, k);
            const float d = in[0][k] - kahan[0][ch];
            sx[ch] += in[0][k];
            sv[ch] += d * d;
        }
        const long double count = static_cast<long double>(p.N * p.HW);
        Doubles want(3, VecD(sx.size()));
        for (std::size_t ch = 0; ch < sx.size(); ++ch) {
            want[0][ch] = static_cast<double>(sx[ch] / count);
            want[1][ch] = static_cast<double>(sv[ch] / count);
            want[2][ch] = static_cast<double>(1.0L / std::sqrt(sv[ch] / count + p.eps));
        }
        return want;
    };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        return Floats{rows_in(in[0], at(s).C * at(s).HW, order)};
    };
    e.permuted = [](int, const Floats& out, const std::vector<int64_t>&) { return out; };
    e.atomic_settled = [](int s, const Floats&) {
        return settled_all(Floats(3, Vec(static_cast<std::size_t>(at(s).C))), at(s).N <= 2);
    };
    return e;
}

ModesEntry batchnorm2d_backward_entry() {
    ModesEntry e = bn_entry("batchnorm2d_backward");
    // dy, x, mean, invstd, gamma; mean and invstd the exact recipe's of x.
    e.inputs = [](int s, uint32_t tag, Inputs kind) {
        const BatchNorm2dParams& p = at(s);
        Vec x = x_of(p, tag, kind);
        Floats stats = stats_recipe(p, x, c::accum_spec(AccumMode::kExact));
        return Floats{dy_of(p, tag, kind), std::move(x), std::move(stats[0]), std::move(stats[2]),
                      uniform_floats(p.C, 0.5f, 1.5f, test_seed(), tag + 3)};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        BatchNorm2dParams p = at(s);
        p.accum = spec;
        const float *dy = d.in(in[0]), *x = d.in(in[1]), *mean = d.in(in[2]), *invstd = d.in(in[3]),
                    *gamma = d.in(in[4]);
        float* dx = d.out(numel(p));  // asked in the outputs' order: dx, dgamma, dbeta
        float* dgamma = d.out(p.C);
        float* dbeta = d.out(p.C);
        d.table().batchnorm2d_backward(dy, x, mean, invstd, gamma, dx, dgamma, dbeta, true, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        return backward_recipe(at(s), in, spec);
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const BatchNorm2dParams& p = at(s);
        if (magnitudes) return backward_scaled(p, in, 1, 1, 1);
        const VecD dy = to_double(in[0]), x = to_double(in[1]), mean = to_double(in[2]),
                   invstd = to_double(in[3]), gamma = to_double(in[4]);
        VecD dx(dy.size()), dg(mean.size()), db(mean.size());
        kernels::ref::batchnorm2d_backward(dy.data(), x.data(), mean.data(), invstd.data(),
                                           gamma.data(), dx.data(), dg.data(), db.data(), true, p);
        return Doubles{dx, dg, db};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {
        const double L = terms_per_total(at(s), m);
        return backward_scaled(at(s), in, L * kEps32, (L + 3) * kEps32, 4 * kEps32);
    };
    // Kahan: the long-double sums of the kernel's float terms dy and dy * xhat (dbeta, dgamma);
    // dx, no sum, the kernel's float formula on those sums rounded once: its own roundings (up
    // to about 3 eps32 |dx|, more than Neumaier's eps32 |S| for a sum) are then not counted,
    // only what the totals' errors carry into it.
    e.ill_reference = [](int s, const Floats& in) {
        const BatchNorm2dParams& p = at(s);
        const Vec &dy = in[0], &x = in[1], &mean = in[2], &invstd = in[3], &gamma = in[4];
        std::vector<long double> sb(static_cast<std::size_t>(p.C)), sg(sb.size());
        const auto xhat = [&](int64_t k) {
            return (x[k] - mean[channel_of(p, k)]) * invstd[channel_of(p, k)];
        };
        for (int64_t k = 0; k < numel(p); ++k) {
            sb[channel_of(p, k)] += dy[k];
            sg[channel_of(p, k)] += dy[k] * xhat(k);
        }
        const float count = kernels::batchnorm2d_count(p);
        Doubles want{VecD(dy.size()), VecD(sb.size()), VecD(sb.size())};
        for (int64_t k = 0; k < numel(p); ++k) {
            const int64_t ch = channel_of(p, k);
            const float kk = (gamma[ch] * invstd[ch]) / count;
            const auto db = static_cast<float>(sb[ch]), dg = static_cast<float>(sg[ch]);
            want[0][k] = kk * (((count * dy[k]) - db) - xhat(k) * dg);
        }
        for (std::size_t ch = 0; ch < sb.size(); ++ch)
            want[1][ch] = static_cast<double>(sg[ch]), want[2][ch] = static_cast<double>(sb[ch]);
        return want;
    };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        return Floats{rows_in(in[0], at(s).C * at(s).HW, order),
                      rows_in(in[1], at(s).C * at(s).HW, order), in[2], in[3], in[4]};
    };
    e.permuted = [](int s, const Floats& out, const std::vector<int64_t>& order) {
        return Floats{rows_in(out[0], at(s).C * at(s).HW, order), out[1], out[2]};
    };
    e.atomic_settled = [](int s, const Floats& in) {
        return settled_all({in[0], in[2], in[2]}, at(s).N <= 2);  // shaped as dx, dgamma, dbeta
    };
    return e;
}

}  // namespace dt::test
