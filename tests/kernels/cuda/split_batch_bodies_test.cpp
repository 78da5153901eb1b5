// SPDX-License-Identifier: MIT
// The CUDA kernels' bodies for a batch split into parts (engine/runtime/batch_split.h), on the
// host over whole grids: in the exact mode conv.wgrad (the tiled leaves, then the combination
// with exact_out), linear.wgrad and the per-channel totals of bias.grad and bn.backward (the
// leaves merged into the channels' accumulators, channel_part_body, channel_round_body) add each
// part's unrounded sums to the caller's accumulators; rounded, those give the whole batch's CPU
// bits for every cut, and each part's own rounded totals are the CPU's for that part. The host staging of batch norm's
// hook (channel_totals.cuh) runs only on a GPU (tests/device/device_ops_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/bias_add.h"
#include "kernels/cuda/bias_grad_bodies.h"
#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/linear_bodies.h"
#include "tests/support/block_runner.h"
#include "tests/support/channel_totals_grid.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::ExactAcc;
using common::for_each_thread;
using common::GridPos;

const common::AccumSpec kExact = common::accum_spec(common::AccumMode::kExact);

std::vector<ExactAcc> zero_accs(int64_t n) {
    std::vector<ExactAcc> a(static_cast<std::size_t>(n));
    common::exact_init_row(a.data(), n);
    return a;
}

std::vector<float> rounded(const std::vector<ExactAcc>& a) {
    std::vector<float> v;
    for (const ExactAcc& e : a) v.push_back(common::exact_value(e));
    return v;
}

/// conv.wgrad of samples [s0, s1) as the launcher runs a part: the tiled per-sample leaves of
/// every output channel, then the combination adding them to accs (exact_out).
void conv_wgrad_part(const float* x, const float* dy, Conv2dParams p, int64_t s0, int64_t s1,
                     ExactAcc* accs) {
    const int64_t xs = p.ci * p.h * p.w, ys = p.co * p.ho * p.wo, R = p.ci * p.kh * p.kw;
    p.n = s1 - s0;
    p.exact_out = accs;
    const int64_t len = p.co * R;
    std::vector<float> leaves(static_cast<std::size_t>(p.n * len), NAN);
    test::run_blocks(
        static_cast<uint32_t>(p.n * cuda::conv_wgrad_tiles(p, 0, p.co)), cuda::SmallTile::kThreads,
        cuda::SmallTile::kShared, [&](const GridPos& t, float* shared, const auto& sync) {
            cuda::conv_wgrad_tiled_block(t, shared, sync, x + s0 * xs, dy + s0 * ys, p, 1, 0, p.co,
                                         cuda::WgradLeafOut{leaves.data(), 0, len});
        });
    float* no_dw = nullptr;  // with exact_out, dw is not written
    for_each_thread(2, 32, [&](const GridPos& t) {
        cuda::conv2d_wgrad_combine_body(t, leaves.data(), nullptr, no_dw, p, 0, len);
    });
}

TEST(CudaSplitBatchBodies, ConvWgradPartsAddUpToTheWholeBatch) {
    // 3x3 'same', and 7x7 pad 3 on a 2x2 map (dead taps: nothing added).
    const Conv2dParams shapes[] = {
        {.n = 7, .ci = 3, .h = 6, .w = 6, .co = 4, .kh = 3, .kw = 3, .stride = 1, .pad = 1},
        {.n = 5, .ci = 2, .h = 2, .w = 2, .co = 3, .kh = 7, .kw = 7, .stride = 1, .pad = 3}};
    for (Conv2dParams p : shapes) {
        p.ho = (p.h + 2 * p.pad - p.kh) / p.stride + 1;
        p.wo = (p.w + 2 * p.pad - p.kw) / p.stride + 1;
        p.accum = kExact;
        const int64_t wn = p.co * p.ci * p.kh * p.kw;
        const std::vector<float> x = test::signed_uniform(p.n * p.ci * p.h * p.w, 1),
                                 dy = test::signed_uniform(p.n * p.co * p.ho * p.wo, 2);
        std::vector<float> whole(static_cast<std::size_t>(wn));
        cpu::conv2d_backward_weight(x.data(), dy.data(), whole.data(), p);
        for (const int64_t cut : {int64_t{1}, p.n / 2, p.n - 1}) {
            std::vector<ExactAcc> accs = zero_accs(wn);
            conv_wgrad_part(x.data(), dy.data(), p, cut, p.n, accs.data());  // any order
            conv_wgrad_part(x.data(), dy.data(), p, 0, cut, accs.data());
            const std::vector<float> got = rounded(accs);
            EXPECT_TRUE(test::bitwise_equal(got.data(), whole.data(), wn))
                << "k" << p.kh << " cut " << cut;
        }
    }
}

TEST(CudaSplitBatchBodies, LinearWgradPartsAddUpToTheWholeBatch) {
    LinearParams p{13, 21, 5};
    p.accum = kExact;
    std::vector<float> x = test::signed_uniform(p.n * p.in, 3),
                       dy = test::signed_uniform(p.n * p.out, 4);
    x[2] = 3e4f, x[p.in + 2] = -3e4f;  // cancellation across the cut
    std::vector<float> whole(static_cast<std::size_t>(p.out * p.in));
    cpu::linear_backward_weight(x.data(), dy.data(), whole.data(), p);
    for (const int64_t cut : {int64_t{1}, int64_t{6}, int64_t{12}}) {
        std::vector<ExactAcc> accs = zero_accs(p.out * p.in);
        for (const auto& part : {std::pair<int64_t, int64_t>{0, cut}, {cut, p.n}}) {
            const int64_t s0 = part.first;  // (no structured binding: the lambda captures it)
            LinearParams q = p;
            q.n = part.second - s0;
            q.exact_out = accs.data();
            for_each_thread(3, 32, [&](const GridPos& t) {
                cuda::linear_wgrad_body(t, x.data() + s0 * p.in, dy.data() + s0 * p.out, nullptr,
                                        nullptr, q);
            });
        }
        const std::vector<float> got = rounded(accs);
        EXPECT_TRUE(test::bitwise_equal(got.data(), whole.data(), p.out * p.in)) << cut;
    }
}

/// The per-channel totals of one part in the exact mode, as channel_totals_exact runs them
/// (without a hook): the leaves merged into zeroed accumulators, the part's share handed on;
/// returns the merged accumulators.
template <int S, class Term>
std::vector<ExactAcc> channel_part(const Term& term, const cuda::ChannelTotals& q,
                                   const cuda::ChannelSinks& sink, const cuda::ChannelSums& local) {
    std::vector<ExactAcc> merged = zero_accs(S * q.C);
    cuda::ChannelLeaves leaves;
    leaves.accs = merged.data();
    test::channel_leaves_on_grid<S>(term, q, leaves);
    for_each_thread(2, 16, [&](const GridPos& t) {
        cuda::channel_part_body(t, S, q, merged.data(), sink, local);
    });
    return merged;
}

TEST(CudaSplitBatchBodies, ChannelTotalsOfPartsGiveTheWholeBatchAndTheirOwnShare) {
    // bias.grad's totals of dy over (N, C, P): two parts add their unrounded totals to the
    // sink (exact_out); rounded, the whole batch's CPU db. Each part's own rounded totals
    // (local) are the CPU's for that part alone; the merged totals of both parts, added as the
    // hook would and rounded by channel_round_body, are the whole batch's again.
    // Rows of 6 (a thread per row) and of 40 positions (the staged program).
    for (const int64_t len : {6, 40}) {
        SCOPED_TRACE(len);
        BiasAddParams p{9, 4, len};
        p.accum = kExact;
        std::vector<float> dy = test::signed_uniform(p.n * p.c * p.p, 5);
        dy[1] = 1e7f, dy[(5 * p.c) * p.p + 1] = -1e7f;  // cancellation across the cut at 5
        std::vector<float> whole(static_cast<std::size_t>(p.c));
        cpu::bias_add_backward(dy.data(), whole.data(), p);
        const int64_t cut = 5;
        std::vector<ExactAcc> sink = zero_accs(p.c), hook = zero_accs(p.c);
        for (const auto& [s0, s1] : {std::pair<int64_t, int64_t>{0, cut}, {cut, p.n}}) {
            BiasAddParams q = p;
            q.n = s1 - s0;
            std::vector<float> own(static_cast<std::size_t>(p.c), NAN), want(own.size());
            cpu::bias_add_backward(dy.data() + s0 * p.c * p.p, want.data(), q);
            cuda::ChannelSinks sinks;
            sinks.sum[0] = sink.data();
            const std::vector<ExactAcc> merged = channel_part<1>(
                cuda::BiasGradTerm{dy.data() + s0 * p.c * p.p, p.p}, cuda::bias_grad_totals(q),
                sinks, cuda::ChannelSums{{own.data(), nullptr}, {}});
            EXPECT_TRUE(test::bitwise_equal(own.data(), want.data(), p.c)) << "own share " << s0;
            for (int64_t c = 0; c < p.c; ++c) common::exact_merge(hook[c], merged[c]);
        }
        const std::vector<float> got = rounded(sink);
        EXPECT_TRUE(test::bitwise_equal(got.data(), whole.data(), p.c)) << "sink";
        std::vector<float> total(static_cast<std::size_t>(p.c), NAN);
        for_each_thread(2, 16, [&](const GridPos& t) {
            cuda::channel_round_body(t, 1, cuda::bias_grad_totals(p), hook.data(),
                                     cuda::ChannelSums{{total.data(), nullptr}, {}});
        });
        EXPECT_TRUE(test::bitwise_equal(total.data(), whole.data(), p.c)) << "completed totals";
    }
}

}  // namespace
}  // namespace dt::kernels
