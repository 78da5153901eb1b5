// SPDX-License-Identifier: MIT
// grad.norm (kernels/grad_norm.h: grad_norm_sq_each) for the accumulation-mode tester: the sum
// of the squares of every element of a list of buffers. Shapes: one element, empty buffers, a
// chunk's tail (1023, 1024, 1025), a list of odd sizes; then 293 leaves and a list of three
// (threads), a list for the keys, the ill-conditioned pair and the contention shapes (64 leaves;
// two, which commute). No sum crosses samples (no SampleOrder shape).
// Bound constants c (c * eps32 * the sum of squares; a square rounds once): chunk + depth + 2 for
// tree, 3 for kahan, 2 for exact, chunk + L + 2 in any order of the L leaves (permuted, atomic),
// chunk = min(largest buffer, kGradNormChunk).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/grad_norm.h"
#include "kernels/ref/grad_norm_ref.h"
#include "tests/kernels/modes/entry_helpers.h"
#include "tests/kernels/modes/op_modes_tester.h"

namespace dt::test {
namespace {

namespace c = kernels::common;
using Sizes = std::vector<int64_t>;

const std::vector<Sizes> kShapes = {{1},
                                    {0, 3, 0},
                                    {1023},
                                    {1024},
                                    {1025},
                                    {5, 2049, 1, 0, 777},
                                    {300000},
                                    {7000, 1, 40000},   // 6, 7: threads
                                    {40960, 17, 3000},  // 8: key
                                    {4096, 4096},       // 9: ill-conditioned
                                    {65536},
                                    {1024, 1000}};  // 10, 11: atomic
const Sizes& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }

int64_t leaves_of(int s) {
    int64_t l = 0;
    for (int64_t n : at(s)) l += kernels::grad_norm_leaves(n);
    return l;
}

}  // namespace

ModesEntry grad_norm_sq_each_entry() {
    ModesEntry e;
    e.kernel = "grad_norm_sq_each";
    for (const Sizes& sizes : kShapes) {
        std::string d = "buffers";
        for (int64_t n : sizes) d.append(1, ' ').append(std::to_string(n));
        e.shapes.push_back(d);
    }
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // one input per buffer
        Floats in;
        for (int64_t n : at(s))
            in.push_back(kind == Inputs::kIll ? spread(n, tag++, 7, 41)
                                              : uniform_floats(n, -1, 1, test_seed(), tag++));
        return in;
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        std::vector<kernels::GradBuffer> buffers;
        for (std::size_t k = 0; k < in.size(); ++k)
            buffers.push_back({const_cast<float*>(d.in(in[k])), at(s)[k]});
        float* total = d.out(1);
        d.table().grad_norm_sq_each(buffers.data(), static_cast<int64_t>(buffers.size()), total,
                                    {spec});
    };
    // Leaves chunk by chunk, buffer by buffer (+0 and the squares in index order; kahan's with
    // kahan_add); exact sums every square.
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        std::vector<float> leaves, squares;
        std::vector<c::KahanSum> kahan;
        for (std::size_t k = 0; k < in.size(); ++k)
            for (int64_t lo = 0; lo < at(s)[k]; lo += kernels::kGradNormChunk) {
                float leaf = 0.0f;
                c::KahanSum ks = c::kahan_zero();
                for (int64_t i = lo; i < std::min(at(s)[k], lo + kernels::kGradNormChunk); ++i) {
                    const float sq = in[k][i] * in[k][i];
                    leaf = leaf + sq;
                    c::kahan_add(ks, sq);
                    squares.push_back(sq);
                }
                leaves.push_back(leaf);
                kahan.push_back(ks);
            }
        if (spec.mode == AccumMode::kExact)
            return Floats{{sum_in_order(squares, spec.mode, false)}};
        if (spec.mode == AccumMode::kKahan)
            return Floats{{c::kahan_value(
                c::kahan_tree_combine(kahan.data(), static_cast<int64_t>(kahan.size())))}};
        return Floats{{combine_leaves(leaves, spec)}};
    };
    e.reference = [](int s, const Floats& in, bool) {  // every term is positive: its own magnitude
        std::vector<std::vector<double>> g;
        std::vector<const double*> ptrs;
        for (const std::vector<float>& v : in) g.emplace_back(v.begin(), v.end());
        for (const std::vector<double>& v : g) ptrs.push_back(v.data());
        return Doubles{{kernels::ref::grad_norm_sq(ptrs.data(), at(s).data(),
                                                   static_cast<int64_t>(ptrs.size()))}};
    };
    e.bound = [](int s, AccumMode m) {
        const int64_t largest = *std::max_element(at(s).begin(), at(s).end());
        const double chunk = static_cast<double>(std::min(largest, kernels::kGradNormChunk));
        const double L = static_cast<double>(leaves_of(s));
        return m == AccumMode::kKahan   ? 3.0
               : m == AccumMode::kExact ? 2.0
               : m == AccumMode::kTree  ? chunk + std::ceil(std::log2(std::max(L, 1.0))) + 2
                                        : chunk + L + 2;
    };
    e.terms = [](int s) {
        int64_t n = 0;
        for (int64_t k : at(s)) n += k;
        return n;
    };
    e.ill_reference = [](int, const Floats& in) {  // the rounded squares, in long double
        long double total = 0;
        for (const std::vector<float>& v : in)
            for (float x : v) total += static_cast<float>(x * x);
        return Doubles{{static_cast<double>(total)}};
    };
    e.crosses_samples = false;
    e.atomic_settled = [](int s, const Floats&) {
        return settled_all({std::vector<float>(1)}, leaves_of(s) <= 2);
    };
    e.thread_shapes = {6, 7};
    e.ill_shape = 9;
    e.key_shape = 8;
    e.key_min_differ = 1;  // one float: five keys must not all round alike
    e.atomic_shapes = {10, 11};
    return e;
}

}  // namespace dt::test
