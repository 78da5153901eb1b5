// SPDX-License-Identifier: MIT
// bias.grad (kernels/bias_add.h: bias_add_backward) for the accumulation-mode tester:
// db[c] = sum over samples s and positions q of dy[s, c, q]. Shapes: the tails of the 8-sample
// leaf groups, P = 1 (linear), SmallCNN-like maps, rows long enough for the exact mode's array
// path (P >= 256); then the thread, sample-order, ill-conditioned, key and contention shapes
// (SmallCNN's first convolution bias and fc1's at batch 128, and N = 32: two atomic partials).
// Bound constants c (c * eps32 * sum|dy|): P + depth + 2 (tree), 3 (kahan), 1 (exact),
// P + N + 2 (permuted), G * P + ceil(N / G) + 2 (atomic: partials of G samples).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/bias_add.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/ref/bias_add_ref.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/rng.h"

namespace dt::test {

ModesEntry bias_add_backward_entry() {
    using kernels::BiasAddParams;
    namespace c = kernels::common;
    static const std::vector<BiasAddParams> shapes = {
        {.n = 1, .c = 1, .p = 1},     {.n = 3, .c = 2, .p = 5},      {.n = 8, .c = 3, .p = 7},
        {.n = 9, .c = 4, .p = 1},     {.n = 17, .c = 5, .p = 49},    {.n = 128, .c = 10, .p = 1},
        {.n = 37, .c = 16, .p = 196}, {.n = 5, .c = 3, .p = 784},    {.n = 129, .c = 33, .p = 196},
        {.n = 4099, .c = 64, .p = 1}, {.n = 37, .c = 16, .p = 49},   {.n = 64, .c = 12, .p = 9},
        {.n = 40, .c = 8, .p = 3},    {.n = 128, .c = 16, .p = 784}, {.n = 128, .c = 32, .p = 1},
        {.n = 32, .c = 16, .p = 784}, {.n = 70, .c = 150, .p = 1}};  // last: cpu chunks of 64
    const auto at = [](int s) { return shapes[static_cast<std::size_t>(s)]; };
    ModesEntry e;
    e.kernel = "bias_add_backward";
    for (const BiasAddParams& p : shapes)
        e.shapes.push_back("n=" + std::to_string(p.n) + " c=" + std::to_string(p.c) +
                           " p=" + std::to_string(p.p));
    e.inputs = [at](int s, uint32_t tag, Inputs kind) {
        const BiasAddParams p = at(s);
        if (kind != Inputs::kIll)
            return Floats{uniform_floats(p.n * p.c * p.p, -1, 1, test_seed(), tag)};
        // Elements span 2^-20 .. 2^20 with alternating signs.
        std::vector<float> dy = uniform_floats(p.n * p.c * p.p, 1, 2, test_seed(), tag);
        for (std::size_t i = 0; i < dy.size(); ++i)
            dy[i] = std::ldexp(dy[i], static_cast<int>(i * 7 % 41) - 20) * (i % 2 ? -1 : 1);
        return Floats{dy};
    };
    e.call = [at](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        BiasAddParams p = at(s);
        p.accum = spec;
        d.table().bias_add_backward(d.in(in[0]), d.out(p.c), p);
    };
    // The recipes (kernels/bias_add.h): tree, a leaf per sample (+0, positions ascending)
    // combined by the pairwise tree; exact, every element at a time; kahan, a leaf per sample
    // combined by the kahan tree; permuted, sample leaves added in the key's order from +0;
    // atomic, partials of G samples (positions ascending) added in ascending order.
    e.recipe = [at](int s, const Floats& in, AccumSpec spec) {
        const BiasAddParams p = at(s);
        const std::vector<float>& dy = in[0];
        std::vector<float> db(static_cast<std::size_t>(p.c));
        std::vector<uint32_t> order(static_cast<std::size_t>(p.n));
        c::permute_order(order.data(), p.n, spec.permute_key);
        for (int64_t ch = 0; ch < p.c; ++ch) {
            const auto row = [&](int64_t sample) { return dy.data() + (sample * p.c + ch) * p.p; };
            if (spec.mode == AccumMode::kExact) {
                c::ExactAcc a;
                c::exact_init(a);
                for (int64_t sample = 0; sample < p.n; ++sample)
                    for (int64_t q = 0; q < p.p; ++q) c::exact_add(a, row(sample)[q]);
                db[ch] = c::exact_value(a);
            } else if (spec.mode == AccumMode::kKahan) {
                std::vector<c::KahanSum> leaves(static_cast<std::size_t>(p.n));
                for (int64_t sample = 0; sample < p.n; ++sample)
                    leaves[sample] = c::kahan_sum(row(sample), p.p);
                db[ch] = c::kahan_value(c::kahan_tree_combine(leaves.data(), p.n));
            } else if (spec.mode == AccumMode::kAtomic) {
                float total = 0.0f;
                for (int64_t s0 = 0; s0 < p.n; s0 += kernels::kBiasAddAtomicGroup) {
                    float part = 0.0f;
                    for (int64_t sample = s0;
                         sample < std::min(p.n, s0 + kernels::kBiasAddAtomicGroup); ++sample)
                        for (int64_t q = 0; q < p.p; ++q) part = part + row(sample)[q];
                    total = total + part;
                }
                db[ch] = total;
            } else if (spec.mode == AccumMode::kTree) {
                std::vector<float> leaves(static_cast<std::size_t>(p.n));
                for (int64_t sample = 0; sample < p.n; ++sample)
                    leaves[sample] = c::sum_sequential(row(sample), p.p);
                db[ch] = c::reduce_tree_combine(leaves.data(), p.n);
            } else {  // permuted
                float acc = 0.0f;
                for (uint32_t sample : order) {
                    float leaf = 0.0f;
                    for (int64_t q = 0; q < p.p; ++q) leaf = leaf + row(sample)[q];
                    acc = acc + leaf;
                }
                db[ch] = acc;
            }
        }
        return Floats{db};
    };
    e.reference = [at](int s, const Floats& in, bool magnitudes) {
        const BiasAddParams p = at(s);
        std::vector<double> dy(in[0].begin(), in[0].end()), db(static_cast<std::size_t>(p.c));
        if (magnitudes)
            for (double& v : dy) v = std::fabs(v);
        kernels::ref::bias_add_backward(dy.data(), db.data(), p);
        return Doubles{db};
    };
    e.bound = [at](int s, AccumMode m) {
        const BiasAddParams p = at(s);
        const double depth = std::ceil(std::log2(static_cast<double>(p.n)));
        const double G = std::min<double>(static_cast<double>(p.n), kernels::kBiasAddAtomicGroup);
        return m == AccumMode::kTree    ? static_cast<double>(p.p) + depth + 2
               : m == AccumMode::kKahan ? 3.0
               : m == AccumMode::kExact ? 1.0
               : m == AccumMode::kAtomic
                   ? G * static_cast<double>(p.p) + std::ceil(static_cast<double>(p.n) / G) + 2
                   : static_cast<double>(p.p + p.n + 2);
    };
    e.terms = [at](int s) { return at(s).n * at(s).p; };
    e.samples = [at](int s) { return at(s).n; };
    e.permute = [at](int s, const Floats& in, const std::vector<int64_t>& order) {
        const BiasAddParams p = at(s);
        const int64_t row = p.c * p.p;
        std::vector<float> moved(in[0].size());
        for (int64_t j = 0; j < p.n; ++j)
            std::copy_n(in[0].begin() + order[static_cast<std::size_t>(j)] * row, row,
                        moved.begin() + j * row);
        return Floats{moved};
    };
    e.permuted = [](int, const Floats& out, const std::vector<int64_t>&) { return out; };
    e.atomic_settled = [at](int s, const Floats&) {
        return settled_all({std::vector<float>(static_cast<std::size_t>(at(s).c))},
                           at(s).n <= 2 * kernels::kBiasAddAtomicGroup);
    };
    e.thread_shapes = {8, 9};
    e.order_shapes = {10, 5};
    e.ill_shape = 11;
    e.key_shape = 12;
    e.atomic_shapes = {13, 14, 15};
    return e;
}

}  // namespace dt::test
