// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA softmax cross-entropy and argmax kernels
// (kernels/cuda/softmax_xent_bodies.h) over every thread of their launch grids on the host, against
// the CPU kernels: bitwise in tree, kahan, exact and permuted (the site `loss`), close under
// atomic (its order is the grid's, on purpose). Rows include ties (first maximum) and a label at
// each end of the row.
#include "kernels/cuda/softmax_xent_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cuda/elementwise_bodies.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

TEST(CudaSoftmaxXentBodies, ForwardBackwardAndArgmaxEqualTheCpu) {
    for (int64_t N : {1, 7, 300}) {
        const int64_t K = 10;
        SCOPED_TRACE(N);
        std::vector<float> logits = test::uniform_floats(N * K, -6.0f, 6.0f, test::test_seed(), 1);
        std::vector<int64_t> labels(static_cast<std::size_t>(N));
        for (int64_t n = 0; n < N; ++n) labels[n] = (n * 7) % K;
        labels[0] = K - 1;
        if (N > 1) logits[K + 2] = logits[K + 5] = 9.0f;  // a tie: the first maximum wins
        for (const common::AccumSpec& spec : test::all_mode_specs(21)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            SoftmaxXentParams p{N, K, spec};
            std::vector<float> m(N), s(N), rows(N), dl(N * K), want_m(N), want_s(N), want_rows(N),
                want_dl(N * K);
            float want_loss = NAN, loss = NAN;
            cpu::softmax_xent_forward(logits.data(), labels.data(), want_m.data(), want_s.data(),
                                      want_rows.data(), &want_loss, p);
            const float dloss = 0.75f;
            cpu::softmax_xent_backward(logits.data(), labels.data(), want_m.data(), want_s.data(),
                                       &dloss, want_dl.data(), p);
            float atomic_total = 0.0f;
            std::vector<uint32_t> order(static_cast<std::size_t>(N));
            for_each_thread(
                cuda::elementwise_blocks(N), cuda::kElementwiseThreads, [&](const GridPos& t) {
                    cuda::softmax_xent_rows_body(t, logits.data(), labels.data(), m.data(),
                                                 s.data(), rows.data(), &atomic_total, p);
                });
            for_each_thread(1, 1, [&](const GridPos& t) {
                cuda::softmax_xent_total_body(t, rows.data(), &atomic_total, &loss, order.data(),
                                              p);
            });
            for_each_thread(3, 32, [&](const GridPos& t) {  // a strided grid
                cuda::softmax_xent_backward_body(t, logits.data(), labels.data(), m.data(),
                                                 s.data(), &dloss, dl.data(), p);
            });
            EXPECT_TRUE(test::bitwise_equal(m.data(), want_m.data(), N));
            EXPECT_TRUE(test::bitwise_equal(s.data(), want_s.data(), N));
            EXPECT_TRUE(test::bitwise_equal(rows.data(), want_rows.data(), N));
            EXPECT_TRUE(test::bitwise_equal(dl.data(), want_dl.data(), N * K));
            if (spec.mode == common::AccumMode::kAtomic) {
                EXPECT_NEAR(loss, want_loss, 1e-5f * std::fabs(want_loss));
            } else {
                EXPECT_TRUE(test::bitwise_equal(&loss, &want_loss, 1));
            }
        }
        std::vector<int64_t> arg(N, -1), want_arg(N, -2);
        cpu::argmax_rows(logits.data(), want_arg.data(), N, K);
        for_each_thread(2, 4, [&](const GridPos& t) {
            cuda::argmax_rows_body(t, logits.data(), arg.data(), N, K);
        });
        EXPECT_EQ(arg, want_arg);
        if (N > 1) {
            EXPECT_EQ(arg[1], 2);
        }
    }
}

}  // namespace
}  // namespace dt::kernels
