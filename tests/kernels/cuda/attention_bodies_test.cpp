// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA causal self-attention (kernels/cuda/attention_bodies.h) over
// every thread of their launch grids on the host, in the launcher's sequence
// (kernels/cuda/attention.cu), against the CPU kernels: forward (out, rowmax, rowsum) and
// backward (dqkv) bitwise in tree, kahan, exact and permuted; close under atomic, whose leaves
// land in the grid's order. Grids: the launcher's shape and a small one whose threads stride
// over several items. Shapes: one token, one key block and one past it, several blocks with D
// odd, H = 1.
#include "kernels/cuda/attention_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/launch_shape.h"
#include "tests/support/attention_runs.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using common::for_each_thread;
using common::GridPos;

using Outs = test::AttentionOuts;

/// Host memory standing in for the launcher's scratch, and its grid: `blocks` x `threads`, or
/// the launcher's shape for n items when blocks is 0.
struct Grid {
    uint32_t blocks = 0, threads = cuda::kElementwiseThreads;
    template <class Body>
    void run(int64_t n, Body&& body) const {
        for_each_thread(blocks > 0 ? blocks : cuda::elementwise_blocks(n), threads, body);
    }
};

struct HostScratch {
    std::vector<float> sums;
    std::vector<common::KahanSum> kahan;
    std::vector<common::ExactAcc> exact;
    std::vector<uint32_t> orders;
    cuda::AttnLeaves leaves;

    HostScratch(const AttentionParams& p, int64_t W, const Grid& g) {
        const int64_t most = attention_max_blocks(p.T), rows = attention_rows(p);
        sums.assign(static_cast<std::size_t>(rows * most * W), NAN);
        kahan.assign(sums.size(), common::KahanSum{NAN, NAN});
        exact.resize(static_cast<std::size_t>(rows * W));
        orders.assign(static_cast<std::size_t>(attention_order_table_size(most)), 0xffffffffu);
        g.run(most, [&](const GridPos& t) {
            cuda::attention_orders_body(t, orders.data(), most, p.accum.permute_key);
        });
        leaves = {sums.data(), kahan.data(), exact.data()};
    }
    void zero_exact() { common::exact_init_row(exact.data(), std::ssize(exact)); }
};

Outs on_grid(const std::vector<float>& qkv, const std::vector<float>& dout,
             const AttentionParams& p, const Grid& g) {
    const int64_t rows = attention_rows(p), items = rows * attention_max_blocks(p.T);
    const bool atomic = p.accum.mode == AccumMode::kAtomic;
    Outs o;
    o.out.assign(dout.size(), atomic ? 0.0f : NAN);
    o.rowmax.assign(static_cast<std::size_t>(rows), NAN);
    o.rowsum.assign(o.rowmax.size(), atomic ? 0.0f : NAN);
    o.dqkv.assign(qkv.size(), atomic ? 0.0f : NAN);
    HostScratch f(p, p.D + 1, g);
    f.zero_exact();
    g.run(rows, [&](const GridPos& t) {
        cuda::attention_rowmax_body(t, qkv.data(), o.rowmax.data(), p);
    });
    g.run(items, [&](const GridPos& t) {
        cuda::attention_forward_leaves_body(t, qkv.data(), o.rowmax.data(), o.out.data(),
                                            o.rowsum.data(), f.leaves, p);
    });
    g.run(rows, [&](const GridPos& t) {
        cuda::attention_forward_combine_body(t, f.leaves, f.orders.data(), o.out.data(),
                                             o.rowsum.data(), p);
    });
    std::vector<float> di(static_cast<std::size_t>(rows), NAN);
    g.run(rows, [&](const GridPos& t) {
        cuda::attention_di_body(t, dout.data(), o.out.data(), di.data(), p);
    });
    HostScratch b(p, 2 * p.D, g);
    for (const bool keys : {false, true}) {
        b.zero_exact();
        g.run(items, [&](const GridPos& t) {
            (keys ? cuda::attention_dkv_leaves_body : cuda::attention_dq_leaves_body)(
                t, qkv.data(), dout.data(), o.rowmax.data(), o.rowsum.data(), di.data(),
                o.dqkv.data(), b.leaves, p);
        });
        if (atomic) continue;
        g.run(rows, [&](const GridPos& t) {
            cuda::attention_grad_combine_body(t, b.leaves, b.orders.data(), o.dqkv.data(), keys, p);
        });
    }
    return o;
}

TEST(CudaAttentionBodies, ForwardAndBackwardEqualTheCpuInEveryMode) {
    for (AttentionParams p : {AttentionParams{.B = 2, .T = 1, .H = 2, .D = 3},
                              AttentionParams{.B = 1, .T = 32, .H = 2, .D = 4},
                              AttentionParams{.B = 2, .T = 33, .H = 1, .D = 8},
                              AttentionParams{.B = 2, .T = 97, .H = 3, .D = 5}}) {
        SCOPED_TRACE("T=" + std::to_string(p.T) + " D=" + std::to_string(p.D));
        const std::vector<float> qkv =
            test::uniform_floats(p.B * p.T * 3 * p.H * p.D, -2, 2, test::test_seed(), 1);
        const std::vector<float> dout =
            test::uniform_floats(p.B * p.T * p.H * p.D, -1, 1, test::test_seed(), 2);
        for (const common::AccumSpec& spec : test::all_mode_specs(19)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            p.accum = spec;
            const Outs want = test::attention_on_cpu(qkv, dout, p);
            for (const Grid g : {Grid{}, Grid{3, 32}}) {
                SCOPED_TRACE(g.blocks == 0 ? "launch shape" : "3 x 32");
                const Outs got = on_grid(qkv, dout, p, g);
                EXPECT_TRUE(test::bitwise_equal(got.rowmax, want.rowmax));
                if (spec.mode == AccumMode::kAtomic) {
                    EXPECT_TRUE(
                        test::within_rel_of_max(got.out.data(), test::to_double(want.out), 1e-5));
                    EXPECT_TRUE(
                        test::within_rel_of_max(got.dqkv.data(), test::to_double(want.dqkv), 1e-5));
                    continue;
                }
                EXPECT_TRUE(test::bitwise_equal(got.out, want.out));
                EXPECT_TRUE(test::bitwise_equal(got.rowsum, want.rowsum));
                EXPECT_TRUE(test::bitwise_equal(got.dqkv, want.dqkv));
            }
        }
    }
}

}  // namespace
}  // namespace dt::kernels
