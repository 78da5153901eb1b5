// SPDX-License-Identifier: MIT
// linear.wgrad and linear.dgrad (kernels/linear.h: linear_backward_weight, linear_backward_data)
// for the accumulation-mode tester. Shapes: 1, primes, around GEMM tiles, the wgrad chunk (512)
// and groups of 8 samples, SmallCNN's fc1 and fc2; then the thread shapes (fc1 at batch 128 with
// 1568 inputs, and an odd one), the sample-order, ill-conditioned and key shapes, and the
// contention shapes (fc1 at batch 128: 8 partials of each kind; N = 32, O = 8: two, which
// commute). Ill-conditioned inputs make the terms exact (x = 1 for wgrad, dy = 1 for dgrad) and
// span 2^-20 .. 2^20 with alternating signs.
// Bound constants c (c * eps32 * the sum over |terms|; a term's product rounds once):
//   wgrad  1 + (depth | 1 | N) + 1 for tree | kahan, exact | permuted; G + ceil(N / G) + 1 for
//          atomic (partials of G = min(N, kLinearAtomicGroup) samples, added in any order);
//   dgrad  O + 1 for tree and permuted (one fma chain), 3 for kahan and exact,
//          min(O, C) + ceil(O / C) for atomic (fma chains over chunks of C features).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/linear.h"
#include "kernels/ref/linear_ref.h"
#include "tests/kernels/modes/entry_helpers.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::LinearParams;
namespace c = kernels::common;

const std::vector<LinearParams> kShapes = {
    {.n = 1, .in = 1, .out = 1},        {.n = 3, .in = 5, .out = 2},
    {.n = 7, .in = 31, .out = 10},      {.n = 8, .in = 32, .out = 16},
    {.n = 17, .in = 33, .out = 9},      {.n = 16, .in = 511, .out = 3},
    {.n = 33, .in = 513, .out = 65},    {.n = 2, .in = 1025, .out = 7},
    {.n = 128, .in = 288, .out = 32},   {.n = 128, .in = 32, .out = 10},
    {.n = 128, .in = 1568, .out = 128}, {.n = 37, .in = 700, .out = 10},  // 10, 11: threads
    {.n = 45, .in = 70, .out = 12},     {.n = 64, .in = 40, .out = 48},   // 12: order, 13: ill
    {.n = 29, .in = 50, .out = 13},     {.n = 32, .in = 288, .out = 8}};  // 14: key, 15: atomic
const LinearParams& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }

/// Uniform values, or ones when `ones`, or values spanning 2^-20 .. 2^20 with a sign period.
std::vector<float> values(int64_t n, uint32_t tag, Inputs kind, bool ones, int stride, int sign) {
    if (kind != Inputs::kIll) return uniform_floats(n, -1, 1, test_seed(), tag);
    if (ones) return std::vector<float>(static_cast<std::size_t>(n), 1.0f);
    return spread(n, tag, stride, 41, sign);
}

/// What both entries share: the shapes, the bound's depth, permutations of the samples.
ModesEntry linear_entry(const std::string& kernel) {
    ModesEntry e;
    e.kernel = kernel;
    for (const LinearParams& p : kShapes)
        e.shapes.push_back("n=" + std::to_string(p.n) + " in=" + std::to_string(p.in) +
                           " out=" + std::to_string(p.out));
    e.samples = [](int s) { return at(s).n; };
    e.thread_shapes = {10, 11};
    e.order_shapes = {12};
    e.ill_shape = 13;
    e.key_shape = 14;
    e.atomic_shapes = {8, 15};
    return e;
}

}  // namespace

ModesEntry linear_backward_weight_entry() {
    ModesEntry e = linear_entry("linear_backward_weight");
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // x, dy
        const LinearParams& p = at(s);
        return Floats{values(p.n * p.in, tag, kind, true, 0, 1),
                      values(p.n * p.out, tag + 1, kind, false, 7, 2)};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        LinearParams p = at(s);
        p.accum = spec;
        d.table().linear_backward_weight(d.in(in[0]), d.in(in[1]), d.out(p.out * p.in), p);
    };
    // Leaves dy[s,o] * x[s,i] (one rounding) combined over samples by the mode; atomic: partials
    // of G samples (+0, products in sample order) added in ascending order from +0.
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const LinearParams& p = at(s);
        const std::vector<float>&x = in[0], &dy = in[1];
        std::vector<float> dw(static_cast<std::size_t>(p.out * p.in)), leaves(p.n);
        for (int64_t o = 0; o < p.out; ++o)
            for (int64_t i = 0; i < p.in; ++i) {
                for (int64_t n = 0; n < p.n; ++n) leaves[n] = dy[n * p.out + o] * x[n * p.in + i];
                if (spec.mode != AccumMode::kAtomic) {
                    dw[o * p.in + i] = combine_leaves(leaves, spec);
                    continue;
                }
                float total = 0.0f;
                for (int64_t n0 = 0; n0 < p.n; n0 += kernels::kLinearAtomicGroup) {
                    float part = 0.0f;
                    for (int64_t n = n0; n < std::min(p.n, n0 + kernels::kLinearAtomicGroup); ++n)
                        part = part + leaves[n];
                    total = total + part;
                }
                dw[o * p.in + i] = total;
            }
        return Floats{dw};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const LinearParams& p = at(s);
        return reference_with(in, magnitudes, p.out * p.in, [&](auto x, auto dy, auto dw) {
            kernels::ref::linear_backward_weight(x, dy, dw, p);
        });
    };
    e.bound = [](int s, AccumMode m) {
        const double n = static_cast<double>(at(s).n);
        const double G = std::min<double>(n, kernels::kLinearAtomicGroup);
        return m == AccumMode::kAtomic     ? G + std::ceil(n / G) + 1
               : m == AccumMode::kTree     ? 2 + std::ceil(std::log2(n))
               : m == AccumMode::kPermuted ? 2 + n
                                           : 3.0;
    };
    e.terms = [](int s) { return at(s).n; };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        return Floats{rows_in(in[0], at(s).in, order), rows_in(in[1], at(s).out, order)};
    };
    e.permuted = [](int, const Floats& out, const std::vector<int64_t>&) { return out; };
    e.atomic_settled = [](int s, const Floats&) {
        const LinearParams& p = at(s);
        return settled_all({std::vector<float>(static_cast<std::size_t>(p.out * p.in))},
                           p.n <= 2 * kernels::kLinearAtomicGroup);
    };
    return e;
}

ModesEntry linear_backward_data_entry() {
    ModesEntry e = linear_entry("linear_backward_data");
    e.crosses_samples = false;
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // dy, w
        const LinearParams& p = at(s);
        return Floats{values(p.n * p.out, tag, kind, true, 0, 1),
                      values(p.out * p.in, tag + 1, kind, false, 11, 3)};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        LinearParams p = at(s);
        p.accum = spec;
        d.table().linear_backward_data(d.in(in[0]), d.in(in[1]), d.out(p.n * p.in), p);
    };
    // Over o of dy[s,o] * w[o,i]: tree and permuted one fma chain from +0 (o ascending, or in the
    // key's order); kahan and exact the float products; atomic fma chains over chunks of C
    // features added in ascending order from +0.
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const LinearParams& p = at(s);
        const std::vector<float>&dy = in[0], &w = in[1];
        std::vector<float> dx(static_cast<std::size_t>(p.n * p.in)), t(p.out);
        std::vector<uint32_t> pi(static_cast<std::size_t>(p.out));
        c::permute_order(pi.data(), p.out, spec.permute_key);
        const int64_t chunk = spec.mode == AccumMode::kAtomic ? kernels::kLinearAtomicChunk : p.out;
        for (int64_t n = 0; n < p.n; ++n)
            for (int64_t i = 0; i < p.in; ++i) {
                const auto term = [&](int64_t o) { return dy[n * p.out + o] * w[o * p.in + i]; };
                float& out = dx[n * p.in + i];
                if (spec.mode == AccumMode::kKahan || spec.mode == AccumMode::kExact) {
                    for (int64_t o = 0; o < p.out; ++o) t[o] = term(o);
                    out = sum_in_order(t, spec.mode, false);
                    continue;
                }
                out = 0.0f;
                for (int64_t o0 = 0; o0 < p.out; o0 += chunk) {
                    float acc = 0.0f;
                    for (int64_t k = o0; k < std::min(p.out, o0 + chunk); ++k) {
                        const int64_t o = spec.mode == AccumMode::kPermuted ? pi[k] : k;
                        acc = std::fma(dy[n * p.out + o], w[o * p.in + i], acc);
                    }
                    out = chunk == p.out ? acc : out + acc;
                }
            }
        return Floats{dx};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const LinearParams& p = at(s);
        return reference_with(in, magnitudes, p.n * p.in, [&](auto dy, auto w, auto dx) {
            kernels::ref::linear_backward_data(dy, w, dx, p);
        });
    };
    e.bound = [](int s, AccumMode m) {
        const double o = static_cast<double>(at(s).out);
        const double C = std::min<double>(o, kernels::kLinearAtomicChunk);
        return m == AccumMode::kAtomic                            ? C + std::ceil(o / C)
               : m == AccumMode::kKahan || m == AccumMode::kExact ? 3.0
                                                                  : o + 1;
    };
    e.terms = [](int s) { return at(s).out; };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        return Floats{rows_in(in[0], at(s).out, order), in[1]};
    };
    e.permuted = [](int s, const Floats& out, const std::vector<int64_t>& order) {
        return Floats{rows_in(out[0], at(s).in, order)};
    };
    e.atomic_settled = [](int s, const Floats&) {
        const LinearParams& p = at(s);
        return settled_all({std::vector<float>(static_cast<std::size_t>(p.n * p.in))},
                           p.out <= 2 * kernels::kLinearAtomicChunk);
    };
    return e;
}

}  // namespace dt::test
