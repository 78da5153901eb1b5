// SPDX-License-Identifier: MIT
// Site loss (kernels/softmax_xent.h: softmax_xent_forward, with softmax_xent_backward after it)
// for the accumulation-mode tester. Outputs: the loss, then the per-sample losses, row maxima,
// row sums and dlogits (dloss = 0.75), which no mode changes: ModeFree pins them to the tree's
// bits, and the loss's bound covers the per-sample losses (kernels' own test bounds the rest).
// Shapes: 1x1, odd ones, SmallCNN's 128x10, 300x100; 1031x37 above the parallel threshold
// (threads); logits whose per-sample losses span 1e-6 .. 1e4 (sample order, key, one contention
// shape); the ill-conditioned batch; 2048x16 and 2x8192 (two atomic partials, which commute).
// The ill-conditioned batch is fixed: sample 0's loss B is about 1e11 (ulp 2^13), the other 4095
// are about 1.79 each. Every subtree of small samples sums below ulp / 2, so the tree returns B;
// the true total B + 4095 v rounds to B + ulp. N = 4096: the division by N is exact.
// Bound of the loss: (depth + 2) eps sum|loss_n| / N for tree, kahan and exact, (N + 2) eps ...
// in any order (permuted, atomic), plus each loss_n's own error (K + 3) eps + 2 eps (log s_n +
// |l_label - m_n| + |loss_n|), over N (the same in every mode: `bounds`, no one c fits).
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/fast_math.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/ref/softmax_xent_ref.h"
#include "kernels/softmax_xent.h"
#include "tests/kernels/modes/entry_helpers.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::test {
namespace {

using kernels::SoftmaxXentParams;
namespace c = kernels::common;

enum class Logits { kUniform, kWide, kIll };
struct Shape {
    int64_t N, K;
    float spread;  // uniform logits in [-spread, spread)
    Logits logits;
};
const std::vector<Shape> kShapes = {
    {1, 1, 1, Logits::kUniform},     {7, 10, 5, Logits::kUniform},
    {33, 3, 40, Logits::kUniform},   {128, 10, 8, Logits::kUniform},
    {300, 100, 6, Logits::kUniform}, {1031, 37, 6, Logits::kUniform},  // 5: threads
    {300, 100, 3, Logits::kWide},    {128, 10, 3, Logits::kWide},      // 6-8: order
    {37, 3, 3, Logits::kWide},       {4096, 4, 1, Logits::kIll},       // 9: ill
    {256, 10, 3, Logits::kWide},     {2048, 16, 3, Logits::kWide},     // 10: key
    {2048, 16, 4, Logits::kUniform}, {2, 8192, 4, Logits::kUniform}};  // 11-13: atomic
const Shape& at(int s) { return kShapes[static_cast<std::size_t>(s)]; }

SoftmaxXentParams params(int s, AccumSpec spec = c::accum_spec(AccumMode::kTree)) {
    SoftmaxXentParams p{.N = at(s).N, .K = at(s).K};
    p.accum = spec;
    return p;
}

std::vector<int64_t> labels_of(const Floats& in) {
    return std::vector<int64_t>(in[1].begin(), in[1].end());
}

/// loss_n, m_n, s_n of every row as the recipe says (class sum in class order).
struct Rows {
    std::vector<float> loss, max, sum;
};
Rows rows_of(int s, const Floats& in) {
    const int64_t N = at(s).N, K = at(s).K;
    const std::vector<int64_t> lab = labels_of(in);
    Rows r;
    for (int64_t n = 0; n < N; ++n) {
        const float* l = in[0].data() + n * K;
        float m = l[0];
        for (int64_t k = 1; k < K; ++k) m = l[k] > m ? l[k] : m;
        float sum = 0.0f;
        for (int64_t k = 0; k < K; ++k) sum = sum + c::dt_expf(l[k] - m);
        r.loss.push_back(c::dt_logf(sum) - (l[lab[n]] - m));
        r.max.push_back(m);
        r.sum.push_back(sum);
    }
    return r;
}

/// The double reference's losses, and each loss_n's own error bound.
struct RefRows {
    std::vector<double> loss, err;
    double total = 0, abs_sum = 0, err_sum = 0;
};
RefRows ref_rows(int s, const Floats& in) {
    const int64_t N = at(s).N, K = at(s).K;
    const std::vector<double> l(in[0].begin(), in[0].end());
    const std::vector<int64_t> lab = labels_of(in);
    std::vector<double> m(N), sum(N);
    RefRows r;
    r.loss.resize(N);
    kernels::ref::softmax_xent_forward(l.data(), lab.data(), m.data(), sum.data(), r.loss.data(),
                                       &r.total, params(s));
    for (int64_t n = 0; n < N; ++n) {
        const double z = std::fabs(l[n * K + lab[n]] - m[n]);
        r.err.push_back((K + 3) * kEps32 +
                        2 * kEps32 * (std::log(sum[n]) + z + std::fabs(r.loss[n])));
        r.abs_sum += std::fabs(r.loss[n]);
        r.err_sum += r.err.back();
    }
    return r;
}

}  // namespace

ModesEntry softmax_xent_forward_entry() {
    ModesEntry e;
    e.kernel = "softmax_xent_forward";
    for (const Shape& sh : kShapes)
        e.shapes.push_back("N=" + std::to_string(sh.N) + " K=" + std::to_string(sh.K) +
                           (sh.logits == Logits::kWide ? " wide" : ""));
    e.inputs = [](int s, uint32_t tag, Inputs kind) {  // logits, labels
        const Shape& sh = at(s);
        std::vector<float> lab, l;
        if (kind == Inputs::kIll) {  // the fixed batch (the header's comment)
            lab.assign(static_cast<std::size_t>(sh.N), 0.0f);
            for (int64_t n = 0; n < sh.N; ++n) l.insert(l.end(), {0.0f, 0.5f, -0.5f, 1.0f});
            l[0] = -1e11f;
            return Floats{l, lab};
        }
        for (float u : uniform_floats(sh.N, 0, 1, test_seed(), tag + 1))
            lab.push_back(static_cast<float>(static_cast<int64_t>(u * sh.K) % sh.K));
        l = uniform_floats(sh.N * sh.K, -sh.spread, sh.spread, test_seed(), tag);
        if (sh.logits == Logits::kWide)  // per-sample losses over 2^-13 .. 2^13 scales
            for (int64_t n = 0; n < sh.N; ++n) {
                const float scale = std::ldexp(1.0f, static_cast<int>(n % 27) - 13);
                for (int64_t k = 0; k < sh.K; ++k) l[n * sh.K + k] *= scale;
                if (n % 5 == 0) l[n * sh.K + static_cast<int64_t>(lab[n])] = -1000.0f * scale;
            }
        return Floats{l, lab};
    };
    e.call = [](int s, const Floats& in, AccumSpec spec, DeviceCall& d) {
        const SoftmaxXentParams p = params(s, spec);
        const float* logits = d.in(in[0]);
        const int64_t* labels = d.in_i64(in[1]);
        float* loss = d.out(1);
        float *rows = d.out(p.N), *rowmax = d.out(p.N), *rowsum = d.out(p.N);
        float* dlogits = d.out(p.N * p.K);
        d.table().softmax_xent_forward(logits, labels, rowmax, rowsum, rows, loss, p);
        d.table().softmax_xent_backward(logits, labels, rowmax, rowsum, d.in({0.75f}), dlogits, p);
    };
    e.recipe = [](int s, const Floats& in, AccumSpec spec) {
        const int64_t N = at(s).N, K = at(s).K;
        const Rows r = rows_of(s, in);
        const float g = 0.75f / static_cast<float>(N);
        const std::vector<int64_t> lab = labels_of(in);
        std::vector<float> dl(static_cast<std::size_t>(N * K));
        for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < K; ++k)
                dl[n * K + k] = ((c::dt_expf(in[0][n * K + k] - r.max[n]) / r.sum[n]) -
                                 (k == lab[n] ? 1.0f : 0.0f)) *
                                g;
        return Floats{
            {combine_leaves(r.loss, spec) / static_cast<float>(N)}, r.loss, r.max, r.sum, dl};
    };
    e.reference = [](int s, const Floats& in, bool magnitudes) {
        const RefRows r = ref_rows(s, in);
        const double N = static_cast<double>(at(s).N);
        if (!magnitudes) return Doubles{{r.total}, r.loss, {}, {}, {}};
        std::vector<double> abs_rows(r.loss.size());
        for (std::size_t n = 0; n < abs_rows.size(); ++n) abs_rows[n] = std::fabs(r.loss[n]);
        return Doubles{{r.abs_sum / N}, abs_rows, {}, {}, {}};
    };
    e.bounds = [](int s, const Floats& in, AccumMode m) {  // the header's bound
        const RefRows r = ref_rows(s, in);
        const double N = static_cast<double>(at(s).N);
        const double c = m == AccumMode::kPermuted || m == AccumMode::kAtomic
                             ? N + 2
                             : std::ceil(std::log2(N)) + 2;
        return Doubles{{(c * kEps32 * r.abs_sum + r.err_sum) / N}, r.err, {}, {}, {}};
    };
    e.terms = [](int s) { return at(s).N; };
    e.ill_reference = [](int s, const Floats& in) {  // the kernel's own losses, in long double
        long double total = 0;
        for (float v : rows_of(s, in).loss) total += v;
        return Doubles{{static_cast<double>(total / at(s).N)}, {}, {}, {}, {}};
    };
    e.samples = [](int s) { return at(s).N; };
    e.permute = [](int s, const Floats& in, const std::vector<int64_t>& order) {
        const int64_t K = at(s).K;
        Floats moved{std::vector<float>(in[0].size()), std::vector<float>(in[1].size())};
        for (std::size_t j = 0; j < order.size(); ++j) {
            moved[1][j] = in[1][static_cast<std::size_t>(order[j])];
            for (int64_t k = 0; k < K; ++k) moved[0][j * K + k] = in[0][order[j] * K + k];
        }
        return moved;
    };
    e.permuted = [](int, const Floats& out, const std::vector<int64_t>& order) {
        Floats moved = out;  // the loss stays; every per-sample output moves
        for (std::size_t k = 1; k < out.size(); ++k) {
            const std::size_t width = out[k].size() / order.size();
            for (std::size_t j = 0; j < order.size(); ++j)
                for (std::size_t i = 0; i < width; ++i)
                    moved[k][j * width + i] = out[k][order[j] * width + i];
        }
        return moved;
    };
    e.mode_free = [](int) { return std::vector<int>{1, 2, 3, 4}; };
    e.atomic_settled = [](int s, const Floats&) {  // the per-sample outputs always
        const std::size_t N = static_cast<std::size_t>(at(s).N),
                          K = static_cast<std::size_t>(at(s).K);
        const std::vector<char> rows(N, 1);
        return Settled{{static_cast<char>(N <= 2)}, rows, rows, rows, std::vector<char>(N * K, 1)};
    };
    e.thread_shapes = {5};
    e.order_shapes = {6, 7, 8};
    e.ill_shape = 9;
    e.key_shape = 10;
    e.key_min_differ = 1;  // one float: six orders must not all round alike
    e.atomic_shapes = {11, 12, 13};
    return e;
}

}  // namespace dt::test
