// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA elementwise kernels (kernels/cuda/elementwise_bodies.h) run
// on the host over every thread of a launch grid, and compared bitwise with the CPU kernels:
// the grid the launcher uses (elementwise_blocks(n) x kElementwiseThreads) and a small grid that
// makes each thread stride over many elements. Outputs start as a NaN pattern, so an element no
// thread writes shows; in-place updates (SGD, Adam) run once per element or differ. Sizes cover
// empty, partial and several blocks. The same bodies run on a GPU in tests/kernels/cuda/*.cu.
#include "kernels/cuda/elementwise_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/finite.h"
#include "tests/support/compare.h"
#include "tests/support/exact_accs.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

struct Grid {
    uint32_t blocks, threads;
};

/// The launcher's grid for n elements, and a 3 x 32 grid (strides of 96).
std::vector<Grid> grids(int64_t n) {
    return {{cuda::elementwise_blocks(n), cuda::kElementwiseThreads}, {3, 32}};
}

const int64_t kSizes[] = {0, 1, 255, 256, 257, 1000, 70001};

std::vector<float> random_values(int64_t n, uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
    return test::uniform_floats(n, lo, hi, test::test_seed(), static_cast<uint32_t>(seed));
}

std::vector<float> nan_filled(int64_t n) {
    return std::vector<float>(static_cast<std::size_t>(n), std::numeric_limits<float>::quiet_NaN());
}

TEST(CudaElementwiseBodies, ReluAndAddEqualTheCpuOnEveryGrid) {
    for (int64_t n : kSizes) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_values(n, 1), dy = random_values(n, 2);
        if (n > 3) x[3] = -0.0f, x[2] = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> want_y = nan_filled(n), want_dx = nan_filled(n), want_s = nan_filled(n);
        cpu::relu_forward(x.data(), want_y.data(), n);
        cpu::relu_backward(x.data(), dy.data(), want_dx.data(), n);
        cpu::add_forward(x.data(), dy.data(), want_s.data(), n);
        for (const Grid& g : grids(n)) {
            std::vector<float> y = nan_filled(n), dx = nan_filled(n), s = nan_filled(n);
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::relu_forward_body(t, x.data(), y.data(), n);
                cuda::relu_backward_body(t, x.data(), dy.data(), dx.data(), n);
                cuda::add_forward_body(t, x.data(), dy.data(), s.data(), n);
            });
            EXPECT_TRUE(test::bitwise_equal(y.data(), want_y.data(), n));
            EXPECT_TRUE(test::bitwise_equal(dx.data(), want_dx.data(), n));
            EXPECT_TRUE(test::bitwise_equal(s.data(), want_s.data(), n));
        }
    }
}

TEST(CudaElementwiseBodies, GeluEqualsTheCpuOnEveryGrid) {
    for (int64_t n : kSizes) {
        SCOPED_TRACE(n);
        std::vector<float> x = random_values(n, 5, -12.0f, 12.0f), dy = random_values(n, 6);
        if (n > 3) x[3] = -0.0f, x[2] = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> want_y = nan_filled(n), want_dx = nan_filled(n);
        cpu::gelu_forward(x.data(), want_y.data(), n);
        cpu::gelu_backward(x.data(), dy.data(), want_dx.data(), n);
        for (const Grid& g : grids(n)) {
            std::vector<float> y = nan_filled(n), dx = nan_filled(n);
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::gelu_forward_body(t, x.data(), y.data(), n);
                cuda::gelu_backward_body(t, x.data(), dy.data(), dx.data(), n);
            });
            EXPECT_TRUE(test::bitwise_equal(y.data(), want_y.data(), n));
            EXPECT_TRUE(test::bitwise_equal(dx.data(), want_dx.data(), n));
        }
    }
}

TEST(CudaElementwiseBodies, BiasAddForwardEqualsTheCpu) {
    for (BiasAddParams p : {BiasAddParams{2, 3, 5}, BiasAddParams{7, 16, 49},
                            BiasAddParams{3, 10, 1}, BiasAddParams{0, 4, 4}}) {
        const int64_t n = p.n * p.c * p.p;
        const std::vector<float> x = random_values(n, 3), b = random_values(p.c, 4);
        std::vector<float> want = nan_filled(n);
        cpu::bias_add_forward(x.data(), b.data(), want.data(), p);
        for (const Grid& g : grids(n)) {
            std::vector<float> y = nan_filled(n);
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::bias_add_forward_body(t, x.data(), b.data(), y.data(), p,
                                            common::make_channel_of(p.p, p.c));
            });
            EXPECT_TRUE(test::bitwise_equal(y.data(), want.data(), n)) << p.n << "x" << p.c;
        }
    }
}

TEST(CudaElementwiseBodies, DropoutDrawsTheCpuMask) {
    // D not a multiple of 4 (a short last group); sample ids out of order.
    for (int64_t D : {1, 6, 64, 1001}) {
        DropoutParams p{5, D, 0.4f, 99, dropout_sub(3, 2)};
        const int64_t n = p.N * p.D;
        const std::vector<float> x = random_values(n, 5), dy = random_values(n, 6);
        const std::vector<int64_t> ids = {17, 3, 250, 4, 9};
        std::vector<float> want_y = nan_filled(n), want_dx = nan_filled(n);
        std::vector<uint8_t> want_mask(static_cast<std::size_t>(n), 7);
        cpu::dropout_forward(x.data(), ids.data(), want_y.data(), want_mask.data(), p);
        cpu::dropout_backward(dy.data(), want_mask.data(), want_dx.data(), p);
        for (const Grid& g : grids(p.N * dropout_groups(p))) {
            std::vector<float> y = nan_filled(n), dx = nan_filled(n);
            std::vector<uint8_t> mask(static_cast<std::size_t>(n), 7);
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::dropout_forward_body(t, x.data(), ids.data(), y.data(), mask.data(), p);
            });
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::dropout_backward_body(t, dy.data(), mask.data(), dx.data(), p);
            });
            EXPECT_EQ(mask, want_mask) << "D " << D;
            EXPECT_TRUE(test::bitwise_equal(y.data(), want_y.data(), n)) << "D " << D;
            EXPECT_TRUE(test::bitwise_equal(dx.data(), want_dx.data(), n)) << "D " << D;
        }
    }
}

TEST(CudaElementwiseBodies, WeightInitWritesTheCpuValuesOnEveryGrid) {
    for (int64_t n : {1, 255, 1001}) {
        const InitUniformParams p{n, 0xabcdef, 7, 0.2f};
        std::vector<float> want = nan_filled(n);
        cpu::init_uniform(want.data(), p);
        for (const Grid& g : grids(n)) {
            std::vector<float> v = nan_filled(n);
            for_each_thread(g.blocks, g.threads,
                            [&](const GridPos& t) { cuda::init_uniform_body(t, v.data(), p); });
            EXPECT_TRUE(test::bitwise_equal(v.data(), want.data(), n))
                << "n " << n << ", grid " << g.blocks << "x" << g.threads;
        }
    }
}

TEST(CudaElementwiseBodies, OptimizerUpdatesEqualTheCpu) {
    for (int64_t n : kSizes) {
        SCOPED_TRACE(n);
        const std::vector<float> p0 = random_values(n, 7), g = random_values(n, 8),
                                 m0 = random_values(n, 9), v0 = random_values(n, 10, 0.0f, 1.0f);
        // SGD: momentum + Nesterov + weight decay, a later (not first) step.
        SgdParams sq{n, 0.05f, 0.9f, 1e-4f, true, false};
        std::vector<float> want_p = p0, want_buf = m0;
        cpu::sgd_update(want_p.data(), g.data(), want_buf.data(), sq);
        // AdamW at step 3.
        AdamParams aq;
        aq.n = n, aq.c2s = 0.0547f, aq.neg_step = -0.0037f, aq.wd = 0.01f, aq.decay = 0.99999f;
        aq.decoupled = true;
        std::vector<float> want_ap = p0, want_m = m0, want_v = v0;
        cpu::adam_update(want_ap.data(), g.data(), want_m.data(), want_v.data(), aq);
        for (const Grid& grid : grids(n)) {
            std::vector<float> p = p0, buf = m0, ap = p0, m = m0, v = v0;
            for_each_thread(grid.blocks, grid.threads, [&](const GridPos& t) {
                cuda::sgd_update_body(t, p.data(), g.data(), buf.data(), sq);
                cuda::adam_update_body(t, ap.data(), g.data(), m.data(), v.data(), aq);
            });
            EXPECT_TRUE(test::bitwise_equal(p.data(), want_p.data(), n));
            EXPECT_TRUE(test::bitwise_equal(buf.data(), want_buf.data(), n));
            EXPECT_TRUE(test::bitwise_equal(ap.data(), want_ap.data(), n));
            EXPECT_TRUE(test::bitwise_equal(m.data(), want_m.data(), n));
            EXPECT_TRUE(test::bitwise_equal(v.data(), want_v.data(), n));
        }
    }
}

TEST(CudaElementwiseBodies, AStepOverManyParametersEqualsTheCpuParameterByParameter) {
    // 37 parameters (three launches of kBatchItems), sizes from 0 to past a block's worth, each
    // with its own step's scalars; SGD with and without a momentum buffer. The launches as the
    // launcher makes them: blockIdx.y picks the parameter, the x blocks cover the largest.
    const int64_t count = 37;
    std::vector<std::vector<float>> p0, g, m0, v0;
    std::vector<AdamParams> aq;
    std::vector<SgdParams> sq;
    for (int64_t i = 0; i < count; ++i) {
        const int64_t n = i == 0 ? 0 : (i * 7919) % 3001 + (i % 5 == 1 ? 70001 : 0);
        const auto seed = static_cast<uint64_t>(100 + 4 * i);
        p0.push_back(random_values(n, seed));
        g.push_back(random_values(n, seed + 1));
        m0.push_back(random_values(n, seed + 2));
        v0.push_back(random_values(n, seed + 3, 0.0f, 1.0f));
        AdamParams a;
        a.n = n, a.c2s = 0.01f * static_cast<float>(i + 1), a.neg_step = -1e-3f / (i + 1);
        a.wd = i % 2 ? 0.01f : 0.0f, a.decay = 0.9999f, a.decoupled = i % 3 == 0;
        aq.push_back(a);
        sq.push_back(SgdParams{n, 0.05f, i % 4 ? 0.9f : 0.0f, 1e-4f, i % 4 == 1, i % 2 == 0});
    }
    std::vector<std::vector<float>> want_ap = p0, want_m = m0, want_v = v0, want_sp = p0,
                                    want_buf = m0;
    std::vector<AdamTensor> want_a;
    std::vector<SgdTensor> want_s;
    for (int64_t i = 0; i < count; ++i) {
        const auto k = static_cast<std::size_t>(i);
        want_a.push_back(
            {want_ap[k].data(), g[k].data(), want_m[k].data(), want_v[k].data(), aq[k]});
        float* buf = sq[k].momentum != 0.0f ? want_buf[k].data() : nullptr;
        want_s.push_back({want_sp[k].data(), g[k].data(), buf, sq[k]});
    }
    cpu::adam_update_each(want_a.data(), count);
    cpu::sgd_update_each(want_s.data(), count);

    std::vector<std::vector<float>> ap = p0, m = m0, v = v0, sp = p0, sbuf = m0;
    std::vector<AdamTensor> a_items;
    std::vector<SgdTensor> s_items;
    for (int64_t i = 0; i < count; ++i) {
        const auto k = static_cast<std::size_t>(i);
        a_items.push_back({ap[k].data(), g[k].data(), m[k].data(), v[k].data(), aq[k]});
        float* buf = sq[k].momentum != 0.0f ? sbuf[k].data() : nullptr;
        s_items.push_back({sp[k].data(), g[k].data(), buf, sq[k]});
    }
    auto launch = [](const auto* items, int64_t n_items) {
        int launches = 0;
        for (int64_t first = 0; first < n_items; first += cuda::kBatchItems, ++launches) {
            const auto b = cuda::item_batch(items, n_items, first);
            for (int y = 0; y < b.count; ++y)
                for_each_thread(cuda::batch_blocks(b), cuda::kElementwiseThreads,
                                [&](const GridPos& t) { cuda::item_body(t, b.item[y]); });
        }
        return launches;
    };
    EXPECT_EQ(launch(a_items.data(), count), 3);
    EXPECT_EQ(launch(s_items.data(), count), 3);
    for (int64_t i = 0; i < count; ++i) {
        SCOPED_TRACE(i);
        const auto k = static_cast<std::size_t>(i);
        const int64_t n = aq[k].n;
        EXPECT_TRUE(test::bitwise_equal(ap[k].data(), want_ap[k].data(), n));
        EXPECT_TRUE(test::bitwise_equal(m[k].data(), want_m[k].data(), n));
        EXPECT_TRUE(test::bitwise_equal(v[k].data(), want_v[k].data(), n));
        EXPECT_TRUE(test::bitwise_equal(sp[k].data(), want_sp[k].data(), n));
        EXPECT_TRUE(test::bitwise_equal(sbuf[k].data(), want_buf[k].data(), n));
        EXPECT_FALSE(test::bitwise_equal(ap[k].data(), p0[k].data(), n) && n > 0);  // updated
    }
}

TEST(CudaElementwiseBodies, NonFiniteScanFindsTheFirstOnAnyGrid) {
    const int64_t n = 70001;
    std::vector<float> x = random_values(n, 11);
    auto scan = [&](const Grid& g) {
        unsigned long long word = kNoneFound;
        for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
            cuda::first_non_finite_body(t, x.data(), n, &word);
        });
        return static_cast<uint64_t>(word);
    };
    auto want = [&] {
        std::vector<uint64_t> w(1, kNoneFound);
        const ScanBuffer b{x.data(), n};
        cpu::first_non_finite_each(&b, 1, w.data());
        return w[0];
    };
    for (const Grid& g : grids(n)) EXPECT_EQ(scan(g), kNoneFound);
    // Threads of later blocks find theirs first in the grid's order; the minimum still wins.
    x[69000] = std::numeric_limits<float>::infinity();
    x[40000] = -std::numeric_limits<float>::infinity();
    x[1234] = std::numeric_limits<float>::quiet_NaN();
    for (const Grid& g : grids(n)) {
        EXPECT_EQ(scan(g), want());  // the same word as the CPU's: index and value class
        EXPECT_EQ(non_finite_index(scan(g)), 1234);
    }
}

TEST(CudaElementwiseBodies, BatchedScansGiveEachBufferTheCpusWord) {
    // 21 buffers in two launches (kBatchItems, then 5), of sizes 0 to 70001, some finite, some
    // with a NaN or an Inf (or several, of both signs) anywhere: each word as the CPU writes it.
    const int64_t count = 21;
    std::vector<std::vector<float>> x;
    std::vector<ScanBuffer> buffers;
    for (int64_t i = 0; i < count; ++i) {
        const int64_t n = i == 0 ? 0 : (i * 104729) % 70001 + 1;
        x.push_back(random_values(n, static_cast<uint64_t>(300 + i)));
        std::vector<float>& v = x.back();
        if (i % 3 == 1)
            v[static_cast<std::size_t>((i * 31) % n)] = -std::numeric_limits<float>::infinity();
        if (i % 4 == 2)
            v[static_cast<std::size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
        if (i % 4 == 2) v[static_cast<std::size_t>(n - 1)] = std::numeric_limits<float>::infinity();
        buffers.push_back({v.data(), n});
    }
    std::vector<uint64_t> want(count, kNoneFound);
    cpu::first_non_finite_each(buffers.data(), count, want.data());
    std::vector<unsigned long long> words(count, kNoneFound);
    std::vector<cuda::ScanItem> items;
    for (int64_t i = 0; i < count; ++i) items.push_back({buffers[i].p, buffers[i].n, &words[i]});
    int launches = 0;
    for (int64_t first = 0; first < count; first += cuda::kBatchItems, ++launches) {
        const auto b = cuda::item_batch(items.data(), count, first);
        for (int y = 0; y < b.count; ++y)
            for_each_thread(cuda::batch_blocks(b), cuda::kElementwiseThreads,
                            [&](const GridPos& t) { cuda::item_body(t, b.item[y]); });
    }
    EXPECT_EQ(launches, 2);
    for (int64_t i = 0; i < count; ++i) {
        EXPECT_EQ(static_cast<uint64_t>(words[i]), want[i]) << "buffer " << i;
        EXPECT_EQ(want[i] != kNoneFound, i % 3 == 1 || i % 4 == 2) << "buffer " << i;
    }
}

TEST(CudaElementwiseBodies, ExactRoundIsExactValueOnAnyGrid) {
    for (int64_t n : kSizes) {
        const std::vector<common::ExactAcc> accs = test::random_exact_accs(n, 21);
        std::vector<float> want(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i) want[i] = common::exact_value(accs[i]);
        for (const Grid& g : grids(n)) {
            std::vector<float> out(static_cast<std::size_t>(n), std::nanf(""));
            for_each_thread(g.blocks, g.threads, [&](const GridPos& t) {
                cuda::exact_round_body(t, accs.data(), n, out.data());
            });
            EXPECT_TRUE(test::bitwise_equal(out, want)) << "n=" << n << " blocks=" << g.blocks;
        }
    }
}

}  // namespace
}  // namespace dt::kernels
