// SPDX-License-Identifier: MIT
// What several accumulation-mode tester entries need (op_modes_tester.h): inputs spread over many
// binades, rows of a matrix in a permuted order, a two-input double reference and its magnitudes,
// and the sums the sites' recipes write plainly.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/rng.h"

namespace dt::test {

/// v[i] = a uniform value in [1, 2) times 2^(i * mul % span - span / 2), negative every
/// `sign_period`-th element: the ill-conditioned inputs of the Kahan check.
inline std::vector<float> spread(int64_t n, uint32_t tag, int mul, int span, int sign_period = 2) {
    std::vector<float> v = uniform_floats(n, 1, 2, test_seed(), tag);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = std::ldexp(v[i], static_cast<int>(i * mul % span) - span / 2) *
               (i % sign_period ? -1 : 1);
    return v;
}

/// The rows of a (samples, width) matrix in `order`: row j of the result is row order[j].
inline std::vector<float> rows_in(const std::vector<float>& m, int64_t width,
                                  const std::vector<int64_t>& order) {
    std::vector<float> moved(m.size());
    for (std::size_t j = 0; j < order.size(); ++j)
        std::copy_n(m.begin() + order[j] * width, width,
                    moved.begin() + static_cast<int64_t>(j) * width);
    return moved;
}

/// ref(a, b, out) on the two inputs in double, or on their magnitudes (the bound's scale).
template <class Ref>
Doubles reference_with(const Floats& in, bool magnitudes, int64_t out_size, Ref ref) {
    std::vector<double> a(in[0].begin(), in[0].end()), b(in[1].begin(), in[1].end());
    if (magnitudes) {
        for (double& v : a) v = std::fabs(v);
        for (double& v : b) v = std::fabs(v);
    }
    std::vector<double> out(static_cast<std::size_t>(out_size));
    ref(a.data(), b.data(), out.data());
    return Doubles{out};
}

/// Terms summed in the order given: kahan_add from (+0, +0), or the kahan tree of (t, +0) pairs
/// when `kahan_tree`; the exact sum rounded once (a term at a time, no array helper); every other
/// mode from +0 in that order (its caller ordered the terms).
inline float sum_in_order(const std::vector<float>& t, kernels::common::AccumMode mode,
                          bool kahan_tree) {
    namespace c = kernels::common;
    const int64_t n = static_cast<int64_t>(t.size());
    if (mode == c::AccumMode::kExact) {
        c::ExactAcc a;
        c::exact_init(a);
        for (float v : t) c::exact_add(a, v);
        return c::exact_value(a);
    }
    if (mode == c::AccumMode::kKahan && kahan_tree) {
        std::vector<c::KahanSum> k(t.size());
        for (std::size_t i = 0; i < t.size(); ++i) k[i] = c::KahanSum{t[i], 0.0f};
        return c::kahan_value(c::kahan_tree_combine(k.data(), n));
    }
    if (mode == c::AccumMode::kKahan) return c::kahan_value(c::kahan_sum(t.data(), n));
    float acc = 0.0f;
    for (float v : t) acc = acc + v;
    return acc;
}

/// Leaves t (one per sample) combined as the cross-sample sites' recipes say: tree the pairwise
/// tree; kahan the kahan tree of (t, +0) pairs; exact the exact sum rounded once; permuted
/// +0 + t[pi[0]] + ..., pi = permute_order(n, key); atomic +0 + t[0] + ... (index order, as at
/// one thread).
inline float combine_leaves(const std::vector<float>& t, kernels::common::AccumSpec spec) {
    namespace c = kernels::common;
    const int64_t n = static_cast<int64_t>(t.size());
    if (spec.mode == c::AccumMode::kTree) return c::reduce_tree_combine(t.data(), n);
    if (spec.mode != c::AccumMode::kPermuted) return sum_in_order(t, spec.mode, true);
    std::vector<uint32_t> order(t.size());
    c::permute_order(order.data(), n, spec.permute_key);
    std::vector<float> ordered;
    for (uint32_t k : order) ordered.push_back(t[k]);
    return sum_in_order(ordered, spec.mode, true);
}

}  // namespace dt::test
