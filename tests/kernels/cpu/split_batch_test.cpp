// SPDX-License-Identifier: MIT
// The kernels' outputs for a batch split into parts (engine/runtime/batch_split.h): in the exact
// mode conv.wgrad, linear.wgrad, bias.grad, bn.backward and ln.grad add their unrounded sums to
// the caller's accumulators (exact_out, exact_dgamma/dbeta), and batch norm completes its totals
// over concurrently running parts through the BatchNormParts hook. Cutting a batch anywhere and
// rounding the merged accumulators gives the whole batch's bits; the parts run here as threads
// that meet in a barrier, as processes meet in an all-reduce.
#include <gtest/gtest.h>

#include <barrier>
#include <thread>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/bias_add.h"
#include "kernels/common/accum_exact.h"
#include "kernels/conv2d.h"
#include "kernels/layer_norm.h"
#include "kernels/linear.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using common::ExactAcc;
using test::bits_of;

std::vector<ExactAcc> zero_accs(int64_t n) {
    std::vector<ExactAcc> a(static_cast<std::size_t>(n));
    for (ExactAcc& e : a) common::exact_init(e);
    return a;
}

std::vector<float> rounded(const std::vector<ExactAcc>& a) {
    std::vector<float> v;
    for (const ExactAcc& e : a) v.push_back(common::exact_value(e));
    return v;
}

const common::AccumSpec kExact = common::accum_spec(AccumMode::kExact);

TEST(SplitBatch, ConvWgradPartsAddUpToTheWholeBatch) {
    // 3x3 same on 6x6 (the tiled exact path when whole; with 48 channels, rows of several
    // tiles), 7x7 pad 3 on 2x2 (dead taps), stride 2; Co = 16 and 32: the direct exact path
    // (the second with dead taps).
    const Conv2dParams shapes[] = {
        {.n = 7, .ci = 3, .h = 6, .w = 6, .co = 4, .kh = 3, .kw = 3, .stride = 1, .pad = 1},
        {.n = 5, .ci = 48, .h = 6, .w = 6, .co = 3, .kh = 3, .kw = 3, .stride = 1, .pad = 1},
        {.n = 5, .ci = 2, .h = 2, .w = 2, .co = 3, .kh = 7, .kw = 7, .stride = 1, .pad = 3},
        {.n = 6, .ci = 2, .h = 9, .w = 9, .co = 5, .kh = 3, .kw = 3, .stride = 2, .pad = 0},
        {.n = 7, .ci = 4, .h = 6, .w = 6, .co = 16, .kh = 3, .kw = 3, .stride = 1, .pad = 1},
        {.n = 5, .ci = 2, .h = 4, .w = 4, .co = 32, .kh = 7, .kw = 7, .stride = 1, .pad = 3}};
    for (Conv2dParams p : shapes) {
        p.ho = (p.h + 2 * p.pad - p.kh) / p.stride + 1,
        p.wo = (p.w + 2 * p.pad - p.kw) / p.stride + 1;
        p.accum = kExact;
        const int64_t xs = p.ci * p.h * p.w, ys = p.co * p.ho * p.wo,
                      wn = p.co * p.ci * p.kh * p.kw;
        const auto x = test::uniform_floats(p.n * xs, -1, 1, test::test_seed(), 1);
        const auto dy = test::uniform_floats(p.n * ys, -1, 1, test::test_seed(), 2);
        std::vector<float> whole(static_cast<std::size_t>(wn));
        cpu::conv2d_backward_weight(x.data(), dy.data(), whole.data(), p);
        for (int64_t cut = 1; cut < p.n; cut += 2) {  // parts [0, cut) and [cut, n)
            std::vector<ExactAcc> acc = zero_accs(wn);
            for (auto [lo, hi] : {std::pair{int64_t{0}, cut}, std::pair{cut, p.n}}) {
                Conv2dParams q = p;
                q.n = hi - lo, q.exact_out = acc.data();
                cpu::conv2d_backward_weight(x.data() + lo * xs, dy.data() + lo * ys, nullptr, q);
            }
            EXPECT_EQ(bits_of(rounded(acc)), bits_of(whole)) << "k " << p.kh << " cut " << cut;
        }
    }
}

TEST(SplitBatch, LinearWgradAndBiasGradPartsAddUpToTheWholeBatch) {
    LinearParams p{.n = 37, .in = 300, .out = 5, .accum = kExact};  // in: several column chunks
    const auto x = test::uniform_floats(p.n * p.in, -1, 1, test::test_seed(), 3);
    const auto dy = test::uniform_floats(p.n * p.out, -1, 1, test::test_seed(), 4);
    std::vector<float> whole(static_cast<std::size_t>(p.out * p.in)), whole_b(5);
    cpu::linear_backward_weight(x.data(), dy.data(), whole.data(), p);
    BiasAddParams b{.n = p.n, .c = p.out, .p = 1, .accum = kExact};
    cpu::bias_add_backward(dy.data(), whole_b.data(), b);
    std::vector<ExactAcc> acc = zero_accs(p.out * p.in), acc_b = zero_accs(p.out);
    for (auto [lo, hi] : {std::pair{0, 1}, std::pair{1, 20}, std::pair{20, 37}}) {
        LinearParams q = p;
        q.n = hi - lo, q.exact_out = acc.data();
        cpu::linear_backward_weight(x.data() + lo * p.in, dy.data() + lo * p.out, nullptr, q);
        BiasAddParams qb = b;
        qb.n = hi - lo, qb.exact_out = acc_b.data();
        cpu::bias_add_backward(dy.data() + lo * p.out, nullptr, qb);
    }
    EXPECT_EQ(bits_of(rounded(acc)), bits_of(whole));
    EXPECT_EQ(bits_of(rounded(acc_b)), bits_of(whole_b));
}

TEST(SplitBatch, LayerNormGradPartsAddUpToTheWholeBatch) {
    // Sequences [0, 1), [1, 5), [5, 9) of 13 tokens; C = 70: two feature blocks and a tail. The
    // x offset makes each part's rounding differ from the whole's. dgamma and dbeta unwritten
    // (null); dx per token, so the parts' rows are the whole's.
    const LayerNormParams p{.M = 9 * 13, .C = 70, .T = 13, .accum = kExact};
    const int64_t row = p.T * p.C, C = p.C;
    const auto x = test::uniform_floats(p.M * C, 99, 101, test::test_seed(), 8);
    const auto dy = test::uniform_floats(p.M * C, -1, 1, test::test_seed(), 9);
    const auto gamma = test::uniform_floats(C, 0.5f, 1.5f, test::test_seed(), 10);
    const auto beta = test::uniform_floats(C, -1, 1, test::test_seed(), 11);
    std::vector<float> y(x.size()), mean(p.M), rstd(p.M), dx(x.size()), dgamma(C), dbeta(C);
    cpu::layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                            p);
    cpu::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(), dx.data(),
                             dgamma.data(), dbeta.data(), p);
    std::vector<ExactAcc> acc_g = zero_accs(C), acc_b = zero_accs(C);
    std::vector<float> part_dx(x.size());
    for (auto [lo, hi] : {std::pair{0, 1}, std::pair{1, 5}, std::pair{5, 9}}) {
        LayerNormParams q = p;
        q.M = (hi - lo) * p.T, q.exact_dgamma = acc_g.data(), q.exact_dbeta = acc_b.data();
        cpu::layer_norm_backward(dy.data() + lo * row, x.data() + lo * row, mean.data() + lo * p.T,
                                 rstd.data() + lo * p.T, gamma.data(), part_dx.data() + lo * row,
                                 nullptr, nullptr, q);
    }
    EXPECT_EQ(bits_of(rounded(acc_g)), bits_of(dgamma));
    EXPECT_EQ(bits_of(rounded(acc_b)), bits_of(dbeta));
    EXPECT_EQ(bits_of(part_dx), bits_of(dx));
    // One pointer alone (a frozen beta): dgamma's sums go on, dbeta is this part's float total.
    LayerNormParams q = p;
    q.M = 4 * p.T;
    std::vector<float> want_g(C), want_b(C), got_b(C), scratch(q.M * C);
    cpu::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                             scratch.data(), want_g.data(), want_b.data(), q);
    std::vector<ExactAcc> only_g = zero_accs(C);
    q.exact_dgamma = only_g.data();
    cpu::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                             scratch.data(), nullptr, got_b.data(), q);
    EXPECT_EQ(bits_of(rounded(only_g)), bits_of(want_g));
    EXPECT_EQ(bits_of(got_b), bits_of(want_b));
}

/// Two parts of a batch meeting in the hook: each deposits its accumulators, both get the sum.
struct TwoParts {
    std::barrier<> meet{2};
    std::vector<ExactAcc> slot[2];
    int calls[2] = {0, 0};
    static void exact(void* ctx, ExactAcc* accs, int64_t n) {
        auto& [self, part] = *static_cast<std::pair<TwoParts*, int>*>(ctx);
        self->slot[part].assign(accs, accs + n);
        ++self->calls[part];
        self->meet.arrive_and_wait();
        for (int64_t i = 0; i < n; ++i) common::exact_merge(accs[i], self->slot[1 - part][i]);
        self->meet.arrive_and_wait();  // both have read before the next call overwrites
    }
};

TEST(SplitBatch, BatchNormPartsGiveTheWholeBatchStatisticsAndGradients) {
    BatchNorm2dParams p{.N = 9, .C = 3, .HW = 25, .eps = 1e-5f, .accum = kExact};
    const int64_t row = p.C * p.HW, C = p.C;
    const auto x = test::uniform_floats(p.N * row, -2, 3, test::test_seed(), 5);
    const auto dy = test::uniform_floats(p.N * row, -1, 1, test::test_seed(), 6);
    const auto gamma = test::uniform_floats(C, 0.5f, 1.5f, test::test_seed(), 7);
    // The whole batch.
    std::vector<float> mean(C), var(C), invstd(C), dx(x.size()), dgamma(C), dbeta(C);
    cpu::batchnorm2d_stats(x.data(), mean.data(), var.data(), invstd.data(), p);
    cpu::batchnorm2d_backward(dy.data(), x.data(), mean.data(), invstd.data(), gamma.data(),
                              dx.data(), dgamma.data(), dbeta.data(), true, p);
    // Parts [0, 4) and [4, 9) side by side.
    TwoParts parts;
    std::vector<ExactAcc> sink_g[2] = {zero_accs(C), zero_accs(C)};
    std::vector<ExactAcc> sink_b[2] = {zero_accs(C), zero_accs(C)};
    std::vector<float> part_dx(x.size());
    std::vector<float> part_mean[2], part_var[2];
    auto run = [&](int part, int64_t lo, int64_t hi) {
        std::pair<TwoParts*, int> ctx{&parts, part};
        BatchNormParts hook{
            .ctx = &ctx, .exact = TwoParts::exact, .floats = nullptr, .n_total = p.N};
        BatchNorm2dParams q = p;
        q.N = hi - lo, q.parts = &hook;
        q.exact_dgamma = sink_g[part].data(), q.exact_dbeta = sink_b[part].data();
        std::vector<float> m(C), v(C), is(C), dg(C), db(C);
        cpu::batchnorm2d_stats(x.data() + lo * row, m.data(), v.data(), is.data(), q);
        cpu::batchnorm2d_backward(dy.data() + lo * row, x.data() + lo * row, m.data(), is.data(),
                                  gamma.data(), part_dx.data() + lo * row, dg.data(), db.data(),
                                  true, q);
        part_mean[part] = m, part_var[part] = v;
    };
    std::thread a(run, 0, 0, 4), b(run, 1, 4, 9);
    a.join(), b.join();
    EXPECT_EQ(parts.calls[0], 3);  // mean, variance, backward
    for (int part : {0, 1}) {
        EXPECT_EQ(bits_of(part_mean[part]), bits_of(mean));
        EXPECT_EQ(bits_of(part_var[part]), bits_of(var));
    }
    EXPECT_EQ(bits_of(part_dx), bits_of(dx));
    // Each part's sinks hold its own sums (not the whole's); merged, they are the whole's.
    EXPECT_NE(bits_of(rounded(sink_g[0])), bits_of(dgamma));
    for (int64_t c = 0; c < C; ++c) {
        common::exact_merge(sink_g[0][static_cast<std::size_t>(c)],
                            sink_g[1][static_cast<std::size_t>(c)]);
        common::exact_merge(sink_b[0][static_cast<std::size_t>(c)],
                            sink_b[1][static_cast<std::size_t>(c)]);
    }
    EXPECT_EQ(bits_of(rounded(sink_g[0])), bits_of(dgamma));
    EXPECT_EQ(bits_of(rounded(sink_b[0])), bits_of(dbeta));
}

}  // namespace
}  // namespace dt::kernels
