// SPDX-License-Identifier: MIT
// attn.fwd and attn.grad (kernels/attention.h: attention_forward, attention_backward) for the
// accumulation-mode tester. Outputs: forward out, rowmax (no mode changes it), rowsum;
// backward dqkv, then the tree forward it ran from (out, rowmax, rowsum: mode-free).
// Shapes: one token, a few, one key block (32), one past it, T = 70 with D odd, H = 1; then the
// thread shape (its rows split over threads), five sequences (sample order: every mode's bits
// move with the sequences, no sum crosses them), the ill-conditioned and key shapes, and the
// contention shape (on the cpu one thread owns a row: atomic's leaves arrive in block order, so
// every element has the recipe's bits), and one longer than the cpu keeps P and dS for.
// Ill-conditioned inputs: q = 0 (every p_tj is 1, every P_tj is 1 / (t + 1)), values and dout
// spread over 2^-20 .. 2^20 with alternating signs: out, dQ and dV cancel.
// Bounds: tests/support/attention_bounds.h, derived from the recipe per element.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/fast_math.h"
#include "tests/kernels/modes/entry_helpers.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/attention_bounds.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::AttentionParams;
namespace c = kernels::common;

const std::vector<AttentionParams> kShapes = {
    {.B = 1, .T = 1, .H = 1, .D = 1},    {.B = 2, .T = 5, .H = 2, .D = 3},
    {.B = 1, .T = 32, .H = 2, .D = 4},   {.B = 2, .T = 33, .H = 1, .D = 8},
    {.B = 1, .T = 70, .H = 2, .D = 7},   {.B = 2, .T = 130, .H = 3, .D = 8},  // 5: threads
    {.B = 5, .T = 40, .H = 2, .D = 4},   {.B = 1, .T = 256, .H = 1, .D = 4},  // 6: order, 7: ill
    {.B = 2, .T = 200, .H = 2, .D = 4},  {.B = 2, .T = 160, .H = 2, .D = 8},  // 8: key, 9: atomic
    {.B = 1, .T = 1030, .H = 1, .D = 2},  // 10: past the cpu's dense backward (kDenseMaxT)
    {.B = 2, .T = 40, .H = 2, .D = 16},  {.B = 1, .T = 35, .H = 2, .D = 32},  // 11-13: the
    {.B = 1, .T = 33, .H = 1, .D = 64}};  // head sizes whose leaves the cpu keeps in registers
const AttentionParams& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }
int64_t width(int s) { return at(s).H * at(s).D; }  // C

// ---- the recipe, written plainly ----

/// T(p[l..h)), the left-complete pairwise tree, by its definition.
template <class V, class Merge>
V tree(const std::vector<V>& p, std::size_t l, std::size_t h, const Merge& merge) {
    if (h - l == 1) return p[l];
    std::size_t s = 1;
    while (2 * s < h - l) s *= 2;
    V left = tree(p, l, l + s, merge);
    merge(left, tree(p, l + s, h, merge));
    return left;
}

/// One sum of the recipe: the terms a[i] * x[i] (or a[i] when x is empty) in index order, in
/// leaves [cuts[k], cuts[k+1]), combined as spec's mode says.
float recipe_sum(const std::vector<float>& a, const std::vector<float>& x,
                 const std::vector<int64_t>& cuts, AccumSpec spec) {
    const std::size_t n = cuts.size() - 1;
    const auto term = [&](int64_t i) { return x.empty() ? a[i] : a[i] * x[i]; };
    if (spec.mode == AccumMode::kExact) {
        c::ExactAcc e;
        c::exact_init(e);
        for (int64_t i = 0; i < cuts.back(); ++i) c::exact_add(e, term(i));
        return c::exact_value(e);
    }
    if (spec.mode == AccumMode::kKahan) {
        std::vector<c::KahanSum> leaves(n, c::kahan_zero());
        for (std::size_t k = 0; k < n; ++k)
            for (int64_t i = cuts[k]; i < cuts[k + 1]; ++i) c::kahan_add(leaves[k], term(i));
        return c::kahan_value(
            tree(leaves, 0, n, [](c::KahanSum& l, const c::KahanSum& r) { c::kahan_merge(l, r); }));
    }
    std::vector<float> leaves(n, 0.0f);
    for (std::size_t k = 0; k < n; ++k)
        for (int64_t i = cuts[k]; i < cuts[k + 1]; ++i)
            leaves[k] = x.empty() ? leaves[k] + a[i] : std::fma(a[i], x[i], leaves[k]);
    if (spec.mode == AccumMode::kTree)
        return tree(leaves, 0, n, [](float& l, float r) { l = l + r; });
    std::vector<uint32_t> order(n);
    for (std::size_t k = 0; k < n; ++k) order[k] = static_cast<uint32_t>(k);  // atomic: in order
    if (spec.mode == AccumMode::kPermuted)
        c::permute_order(order.data(), static_cast<int64_t>(n), spec.permute_key);
    float total = 0.0f;
    for (uint32_t k : order) total = total + leaves[k];
    return total;
}

/// Leaf boundaries of indices lo .. hi-1 at the multiples of `block`.
std::vector<int64_t> cuts_of(int64_t lo, int64_t hi, int64_t block) {
    std::vector<int64_t> cuts = {0};
    for (int64_t i = (lo / block + 1) * block; i < hi; i += block) cuts.push_back(i - lo);
    cuts.push_back(hi - lo);
    return cuts;
}

float chain(const float* a, const float* b, int64_t D) {  // fma chain from +0, d ascending
    float acc = 0.0f;
    for (int64_t d = 0; d < D; ++d) acc = std::fma(a[d], b[d], acc);
    return acc;
}

/// The recipe's float values of one shape: the forward (in `fwd`) and, with dout, the terms
/// and sums of the backward (in `bwd`). Terms: per output element of dqkv, its a and x.
struct Recipe {
    std::vector<float> out, rowmax, rowsum, dqkv;
    std::vector<std::vector<float>> a, x;  // the backward's terms per element of dqkv
};
Recipe recipe_of(const AttentionParams& p, const std::vector<float>& qkv,
                 const std::vector<float>* dout, AccumSpec fwd, AccumSpec bwd) {
    const int64_t T = p.T, D = p.D, C = p.H * p.D;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const auto ptr = [&](int part, int64_t b, int64_t h, int64_t t) {
        return qkv.data() + (b * T + t) * 3 * C + part * C + h * D;
    };
    Recipe r;
    r.out.resize(static_cast<std::size_t>(p.B * T * C));
    r.rowmax.resize(static_cast<std::size_t>(p.B * p.H * T));
    r.rowsum.resize(r.rowmax.size());
    if (dout) r.dqkv.resize(qkv.size()), r.a.resize(qkv.size()), r.x.resize(qkv.size());
    std::vector<float> s, pr, P(static_cast<std::size_t>(T * T)), dS(P.size()), col;
    for (int64_t b = 0; b < p.B; ++b)
        for (int64_t h = 0; h < p.H; ++h) {
            const int64_t row0 = (b * p.H + h) * T;
            for (int64_t t = 0; t < T; ++t) {
                s.clear(), pr.clear();
                for (int64_t j = 0; j <= t; ++j)
                    s.push_back(chain(ptr(0, b, h, t), ptr(1, b, h, j), D) * scale);
                float m = s[0];
                for (float v : s) m = v > m ? v : m;
                for (float v : s) pr.push_back(c::dt_expf(v - m));
                const std::vector<int64_t> cuts = cuts_of(0, t + 1, kernels::kAttnKeyBlock);
                const float l = recipe_sum(pr, {}, cuts, fwd);
                for (int64_t d = 0; d < D; ++d) {
                    col.clear();
                    for (int64_t j = 0; j <= t; ++j) col.push_back(ptr(2, b, h, j)[d]);
                    r.out[(b * T + t) * C + h * D + d] = recipe_sum(pr, col, cuts, fwd) / l;
                }
                r.rowmax[row0 + t] = m, r.rowsum[row0 + t] = l;
            }
            if (!dout) continue;
            const auto g = [&](int64_t t) { return dout->data() + (b * T + t) * C + h * D; };
            for (int64_t t = 0; t < T; ++t) {
                const float di = chain(g(t), r.out.data() + (b * T + t) * C + h * D, D);
                for (int64_t j = 0; j <= t; ++j) {
                    const float sc = chain(ptr(0, b, h, t), ptr(1, b, h, j), D) * scale;
                    const float prob = c::dt_expf(sc - r.rowmax[row0 + t]) / r.rowsum[row0 + t];
                    P[t * T + j] = prob;
                    dS[t * T + j] = (prob * (chain(g(t), ptr(2, b, h, j), D) - di)) * scale;
                }
            }
            const auto fill = [&](std::size_t e, const std::vector<int64_t>& cuts) {
                r.dqkv[e] = recipe_sum(r.a[e], r.x[e], cuts, bwd);
            };
            for (int64_t t = 0; t < T; ++t)
                for (int64_t d = 0; d < D; ++d) {  // dQ_t over keys 0..t
                    const std::size_t e =
                        static_cast<std::size_t>(ptr(0, b, h, t) - qkv.data() + d);
                    for (int64_t j = 0; j <= t; ++j)
                        r.a[e].push_back(dS[t * T + j]), r.x[e].push_back(ptr(1, b, h, j)[d]);
                    fill(e, cuts_of(0, t + 1, kernels::kAttnKeyBlock));
                }
            for (int64_t j = 0; j < T; ++j)
                for (int64_t d = 0; d < D; ++d) {  // dK_j and dV_j over queries j..T-1
                    const std::size_t ek =
                        static_cast<std::size_t>(ptr(1, b, h, j) - qkv.data() + d);
                    const std::size_t ev = ek + static_cast<std::size_t>(C);
                    for (int64_t t = j; t < T; ++t) {
                        r.a[ek].push_back(dS[t * T + j]), r.x[ek].push_back(ptr(0, b, h, t)[d]);
                        r.a[ev].push_back(P[t * T + j]), r.x[ev].push_back(g(t)[d]);
                    }
                    fill(ek, cuts_of(j, T, kernels::kAttnQueryBlock));
                    fill(ev, cuts_of(j, T, kernels::kAttnQueryBlock));
                }
        }
    return r;
}

// ---- what both entries share ----

std::vector<float> qkv_input(int s, uint32_t tag, Inputs kind) {
    const AttentionParams& p = at(s);
    const int64_t C = width(s);
    std::vector<float> x = uniform_floats(p.B * p.T * 3 * C, -2, 2, test_seed(), tag);
    if (kind != Inputs::kIll) return x;
    const std::vector<float> v = spread(p.B * p.T * C, tag + 7, 7, 41);
    for (int64_t i = 0; i < p.B * p.T; ++i)
        for (int64_t k = 0; k < C; ++k)
            x[i * 3 * C + k] = 0.0f, x[i * 3 * C + 2 * C + k] = v[i * C + k];
    return x;
}

/// Sequence-major tensors moved with the sequences: in[k] has in[k].size() / B per sequence.
Floats by_sequence(int s, const Floats& xs, const std::vector<int64_t>& order) {
    Floats moved;
    for (const std::vector<float>& x : xs)
        moved.push_back(rows_in(x, static_cast<int64_t>(x.size()) / at(s).B, order));
    return moved;
}

ModesEntry attention_entry(const std::string& kernel) {
    ModesEntry e;
    e.kernel = kernel;
    for (const AttentionParams& p : kShapes)
        e.shapes.push_back("B=" + std::to_string(p.B) + " T=" + std::to_string(p.T) +
                           " H=" + std::to_string(p.H) + " D=" + std::to_string(p.D));
    e.samples = [](int s) { return at(s).B; };
    e.crosses_samples = false;
    e.permute = by_sequence;
    e.permuted = by_sequence;
    e.terms = [](int s) { return at(s).T; };
    e.atomic_settled = [](int s, const Floats& in) {  // one thread adds a row's leaves in order
        const AttentionParams& p = at(s);
        Floats like = {std::vector<float>(in[0].size() / 3), std::vector<float>(p.B * p.H * p.T),
                       std::vector<float>(p.B * p.H * p.T)};
        if (in.size() > 1) like.insert(like.begin(), in[0]);
        return settled_all(like, true);
    };
    e.thread_shapes = {5};
    e.order_shapes = {6};
    e.ill_shape = 7;
    e.key_shape = 8;
    e.atomic_shapes = {9};
    return e;
}

AttentionParams params(int s, AccumSpec spec) {
    AttentionParams p = at(s);
    p.accum = spec;
    return p;
}

}  // namespace

ModesEntry attention_forward_entry() {
    ModesEntry e = attention_entry("attention_forward");
    e.inputs = [](int s, uint32_t tag, Inputs kind) { return Floats{qkv_input(s, tag, kind)}; };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        const AttentionParams p = params(s, spec);
        const float* qkv = d.in(in[0]);
        float* out = d.out(p.B * p.T * width(s));
        float *rowmax = d.out(kernels::attention_rows(p)),
              *rowsum = d.out(kernels::attention_rows(p));
        d.table().attention_forward(qkv, out, rowmax, rowsum, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const Recipe r = recipe_of(at(s), in[0], nullptr, spec, spec);
        return Floats{r.out, r.rowmax, r.rowsum};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const AttentionRef r =
            attention_reference(in[0], nullptr, at(s), AccumMode::kTree, AccumMode::kTree);
        if (!magnitudes) return Doubles{r.out, r.rowmax, r.rowsum};
        return Doubles{r.out_mag, r.rowmax_b, r.rowsum};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {
        const AttentionRef r = attention_reference(in[0], nullptr, at(s), m, m);
        return Doubles{r.out_b, r.rowmax_b, r.rowsum_b};
    };
    // The Kahan check on out: with q = 0 every p is 1 and l = t + 1 exactly, so out's float terms
    // are the values themselves; their long double sum over t + 1.
    e.ill_reference = [](int s, const Floats& in) {
        const AttentionParams& p = at(s);
        const int64_t C = width(s);
        std::vector<double> out(static_cast<std::size_t>(p.B * p.T * C));
        for (int64_t b = 0; b < p.B; ++b)
            for (int64_t h = 0; h < p.H; ++h)
                for (int64_t t = 0; t < p.T; ++t)
                    for (int64_t d = 0; d < p.D; ++d) {
                        long double o = 0;
                        for (int64_t j = 0; j <= t; ++j)
                            o += in[0][(b * p.T + j) * 3 * C + 2 * C + h * p.D + d];
                        out[(b * p.T + t) * C + h * p.D + d] = static_cast<double>(o / (t + 1));
                    }
        return Doubles{out, {}, {}};
    };
    e.mode_free = [](int) { return std::vector<int>{1}; };
    return e;
}

ModesEntry attention_backward_entry() {
    ModesEntry e = attention_entry("attention_backward");
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // qkv, dout
        const AttentionParams& p = at(s);
        const int64_t n = p.B * p.T * width(s);
        return Floats{qkv_input(s, tag, kind),
                      kind == Inputs::kIll ? spread(n, tag + 1, 11, 41, 3)
                                           : uniform_floats(n, -1, 1, test_seed(), tag + 1)};
    };
    // The forward in tree (its outputs are outputs 1-3), then the backward in spec.
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        const AttentionParams p = params(s, spec);
        const float *qkv = d.in(in[0]), *dout = d.in(in[1]);
        float* dqkv = d.out(static_cast<int64_t>(in[0].size()));
        float* out = d.out(p.B * p.T * width(s));
        float *rowmax = d.out(kernels::attention_rows(p)),
              *rowsum = d.out(kernels::attention_rows(p));
        d.table().attention_forward(qkv, out, rowmax, rowsum,
                                    params(s, c::accum_spec(AccumMode::kTree)));
        d.table().attention_backward(qkv, out, rowmax, rowsum, dout, dqkv, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const Recipe r = recipe_of(at(s), in[0], &in[1], c::accum_spec(AccumMode::kTree), spec);
        return Floats{r.dqkv, r.out, r.rowmax, r.rowsum};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const AttentionRef r =
            attention_reference(in[0], &in[1], at(s), AccumMode::kTree, AccumMode::kTree);
        return Doubles{magnitudes ? r.dqkv_mag : r.dqkv, {}, {}, {}};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {
        return Doubles{
            attention_reference(in[0], &in[1], at(s), AccumMode::kTree, m).dqkv_b, {}, {}, {}};
    };
    e.ill_reference = [](int s, const Floats& in) {  // the recipe's float terms in long double
        const Recipe r = recipe_of(at(s), in[0], &in[1], c::accum_spec(AccumMode::kTree),
                                   c::accum_spec(AccumMode::kTree));
        std::vector<double> sums(r.a.size());
        for (std::size_t k = 0; k < sums.size(); ++k) {
            long double total = 0;
            for (std::size_t i = 0; i < r.a[k].size(); ++i) total += r.a[k][i] * r.x[k][i];
            sums[k] = static_cast<double>(total);
        }
        return Doubles{sums, {}, {}, {}};
    };
    e.mode_free = [](int) { return std::vector<int>{1, 2, 3}; };
    return e;
}

}  // namespace dt::test
