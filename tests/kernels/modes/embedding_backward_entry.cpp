// SPDX-License-Identifier: MIT
// embed.grad (kernels/embedding.h: embedding_backward) for the accumulation-mode tester:
// dtable[v, c] = sum over rows m with ids[m] == v of dy[m, c], the rows being B sequences of T
// positions (the samples are the sequences). Inputs: ids (carried as floats, a function of the
// shape alone) and dy. Ids: skewed like bytes of text (u^3: a few rows take most, many none),
// every id equal, or positions (ids[m] = t). Shapes: V = 1, C odd, one row hit by all, positions,
// byte-like tables, V > 256; the thread shapes (M * C above the CPU's parallel threshold), the
// sample-order shapes, the ill-conditioned one (4 rows, the first of about 1300 terms), the key
// shape, and the contention shapes (the benchmark's B = 32, T = 256, V = 256, C = 192, atomic only;
// 4 rows, the first of about 650 terms; positions of 2 sequences, every element settled).
// Bound constants c (c * eps32 * sum|dy|): T + depth + 2 (tree: leaves of at most T terms, then
// ceil(log2 B) levels), 3 (kahan), 1 (exact), T + B + 2 (permuted), n + 2 (atomic: the n rows
// of the most frequent id added in any order).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/embedding.h"
#include "kernels/ref/embedding_ref.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::EmbeddingParams;
namespace c = kernels::common;

enum class Ids { kSkewed, kAllEqual, kPositions };
struct Shape {
    int64_t V, C, B, T;
    Ids ids;
};
const std::vector<Shape> kShapes = {
    {1, 1, 1, 1, Ids::kSkewed},        {1, 5, 3, 4, Ids::kSkewed},         // 0-1
    {7, 17, 5, 9, Ids::kSkewed},       {4, 3, 17, 5, Ids::kAllEqual},      // 2-3
    {12, 7, 6, 12, Ids::kPositions},   {256, 33, 9, 31, Ids::kSkewed},     // 4-5
    {300, 16, 4, 64, Ids::kSkewed},                                        // 6
    {256, 48, 16, 64, Ids::kSkewed},   {64, 24, 24, 64, Ids::kPositions},  // 7-8: threads
    {32, 9, 24, 16, Ids::kSkewed},     {16, 5, 37, 8, Ids::kSkewed},       // 9-10: order
    {4, 6, 64, 32, Ids::kSkewed},                                          // 11: ill
    {8, 6, 40, 8, Ids::kSkewed},                                           // 12: key
    {256, 192, 32, 256, Ids::kSkewed}, {4, 64, 16, 64, Ids::kSkewed},      // 13-15: atomic
    {64, 8, 2, 64, Ids::kPositions}};
const Shape& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }

EmbeddingParams params(int s, AccumSpec spec = c::accum_spec(AccumMode::kTree)) {
    const Shape& sh = at(s);
    return EmbeddingParams{.V = sh.V, .C = sh.C, .M = sh.B * sh.T, .T = sh.T, .accum = spec};
}

/// The shape's ids (its own, whatever the tag), as floats.
std::vector<float> ids_input(int s) {
    const Shape& sh = at(s);
    const int64_t M = sh.B * sh.T;
    const std::vector<float> u = uniform_floats(M, 0, 1, 0xe3bedu, static_cast<uint32_t>(s));
    std::vector<float> ids(static_cast<std::size_t>(M));
    for (int64_t m = 0; m < M; ++m) {
        const auto skewed = static_cast<int64_t>(static_cast<double>(sh.V) * u[m] * u[m] * u[m]);
        ids[m] = static_cast<float>(sh.ids == Ids::kAllEqual    ? sh.V / 2
                                    : sh.ids == Ids::kPositions ? m % sh.T
                                                                : std::min(skewed, sh.V - 1));
    }
    return ids;
}

std::vector<int64_t> ids_of(const Floats& in) {
    return std::vector<int64_t>(in[0].begin(), in[0].end());
}

/// The rows of each id, ascending.
std::vector<std::vector<int64_t>> rows_by_id(int s, const std::vector<int64_t>& ids) {
    std::vector<std::vector<int64_t>> rows(static_cast<std::size_t>(at(s).V));
    for (std::size_t m = 0; m < ids.size(); ++m) rows[ids[m]].push_back(static_cast<int64_t>(m));
    return rows;
}

/// The rows of the most frequent id.
int64_t max_rows(int s) {
    int64_t most = 0;
    const std::vector<float> ids = ids_input(s);
    for (const auto& r : rows_by_id(s, std::vector<int64_t>(ids.begin(), ids.end())))
        most = std::max<int64_t>(most, static_cast<int64_t>(r.size()));
    return most;
}

}  // namespace

ModesEntry embedding_backward_entry() {
    ModesEntry e;
    e.kernel = "embedding_backward";
    for (const Shape& sh : kShapes)
        e.shapes.push_back("V=" + std::to_string(sh.V) + " C=" + std::to_string(sh.C) +
                           " B=" + std::to_string(sh.B) + " T=" + std::to_string(sh.T) +
                           (sh.ids == Ids::kAllEqual    ? " one id"
                            : sh.ids == Ids::kPositions ? " positions"
                                                        : ""));
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // ids, dy
        const Shape& sh = at(s);
        const int64_t n = sh.B * sh.T * sh.C;
        std::vector<float> dy = uniform_floats(n, -1, 1, test_seed(), tag);
        if (kind == Inputs::kIll) {  // elements over 2^-20 .. 2^20, alternating signs
            dy = uniform_floats(n, 1, 2, test_seed(), tag);
            for (std::size_t i = 0; i < dy.size(); ++i)
                dy[i] = std::ldexp(dy[i], static_cast<int>(i * 7 % 41) - 20) * (i % 2 ? -1 : 1);
        } else if (kind == Inputs::kSpecial) {  // about 1 in 3 wild; row 0 all -0
            const float wild[] = {1e30f, -1e30f, 1e-30f,   -3e-41f,   3e38f, 3e38f, -0.0f,
                                  -0.0f, -1.0f,  INFINITY, -INFINITY, NAN,   7e-45f};
            for (float& v : dy) {
                const int pick = static_cast<int>((v + 1) * 20);
                v = pick < 13 ? wild[pick] : v * 0.5f;
            }
            for (int64_t k = 0; k < sh.C; ++k) dy[k] = -0.0f;
        }
        return Floats{ids_input(s), dy};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        const EmbeddingParams p = params(s, spec);
        const int64_t* ids = d.in_i64(in[0]);
        d.table().embedding_backward(ids, d.in(in[1]), d.out(p.V * p.C), p);
    };
    // The recipes (kernels/embedding.h), dense: a leaf for every sequence (+0 for one without the
    // id: positions ascending from +0), combined by the tree (tree), by the tree with kahan
    // leaves and kahan_merge (kahan), from +0 in the key's order of the sequences (permuted);
    // exact: every term at once; atomic at one thread: +0 and the rows ascending.
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const EmbeddingParams p = params(s, spec);
        const int64_t B = kernels::embedding_sequences(p);
        const std::vector<float>& dy = in[1];
        const auto rows = rows_by_id(s, ids_of(in));
        std::vector<uint32_t> order(static_cast<std::size_t>(B));
        c::permute_order(order.data(), B, spec.permute_key);
        std::vector<float> dtable(static_cast<std::size_t>(p.V * p.C));
        for (int64_t v = 0; v < p.V; ++v) {
            for (int64_t ch = 0; ch < p.C; ++ch) {
                std::vector<float> leaves(static_cast<std::size_t>(B), 0.0f);
                std::vector<c::KahanSum> kleaves(static_cast<std::size_t>(B), c::kahan_zero());
                c::ExactAcc exact;
                c::exact_init(exact);
                float atomic = 0.0f;
                for (int64_t m : rows[v]) {
                    const float x = dy[m * p.C + ch];
                    leaves[m / p.T] = leaves[m / p.T] + x;
                    c::kahan_add(kleaves[m / p.T], x);
                    c::exact_add(exact, x);
                    atomic = atomic + x;
                }
                float& out = dtable[v * p.C + ch];
                switch (spec.mode) {
                    case AccumMode::kTree:
                        out = c::reduce_tree_combine(leaves.data(), B);
                        break;
                    case AccumMode::kKahan:
                        out = c::kahan_value(c::kahan_tree_combine(kleaves.data(), B));
                        break;
                    case AccumMode::kExact:
                        out = c::exact_value(exact);
                        break;
                    case AccumMode::kPermuted:
                        out = 0.0f;
                        for (uint32_t b : order) out = out + leaves[b];
                        break;
                    case AccumMode::kAtomic:
                        out = atomic;
                        break;
                }
            }
        }
        return Floats{dtable};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const EmbeddingParams p = params(s);
        const std::vector<int64_t> ids = ids_of(in);
        std::vector<double> dy(in[1].begin(), in[1].end()),
            dtable(static_cast<std::size_t>(p.V * p.C));
        if (magnitudes)
            for (double& v : dy) v = std::fabs(v);
        kernels::ref::embedding_backward(ids.data(), dy.data(), dtable.data(), p);
        return Doubles{dtable};
    };
    e.bound = [](int s, AccumMode m) {
        const double T = static_cast<double>(at(s).T), B = static_cast<double>(at(s).B);
        const double depth = std::ceil(std::log2(std::max(B, 1.0)));
        return m == AccumMode::kTree       ? T + depth + 2
               : m == AccumMode::kKahan    ? 3.0
               : m == AccumMode::kExact    ? 1.0
               : m == AccumMode::kPermuted ? T + B + 2
                                           : static_cast<double>(max_rows(s)) + 2;
    };
    e.terms = [](int s) { return max_rows(s); };
    e.samples = [](int s) { return at(s).B; };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        const int64_t T = at(s).T, C = at(s).C;
        Floats moved{std::vector<float>(in[0].size()), std::vector<float>(in[1].size())};
        for (std::size_t j = 0; j < order.size(); ++j) {
            std::copy_n(in[0].begin() + order[j] * T, T, moved[0].begin() + j * T);
            std::copy_n(in[1].begin() + order[j] * T * C, T * C, moved[1].begin() + j * T * C);
        }
        return moved;
    };
    e.permuted = [](int, const Floats& out, const std::vector<int64_t>&) { return out; };
    e.atomic_settled = [](int s, const Floats& in) {  // the rows of ids with at most two rows
        const auto rows = rows_by_id(s, ids_of(in));
        std::vector<char> settled;
        for (const auto& r : rows) settled.insert(settled.end(), at(s).C, r.size() <= 2 ? 1 : 0);
        return Settled{settled};
    };
    e.thread_shapes = {7, 8};
    e.order_shapes = {9, 10, 5};
    e.special_shapes = {2, 5, 9};
    e.ill_shape = 11;
    e.key_shape = 12;
    e.atomic_shapes = {13, 14, 15};
    e.atomic_only_shapes = {13};
    return e;
}

}  // namespace dt::test
