// SPDX-License-Identifier: MIT
// The per-thread bodies of the CUDA global gradient norm (kernels/cuda/grad_norm_bodies.h) over
// whole grids on the host, against the CPU kernel: the total bitwise in tree, kahan, exact and
// permuted, close under atomic; clipping bitwise. Lists: empty buffers, a chunk's tail, many
// leaves over few threads (each thread strides over several).
#include "kernels/cuda/grad_norm_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cuda/launch_shape.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::GridPos;

/// The launcher's sequence (kernels/cuda/grad_norm.cu) on the host, `blocks` x 32 threads.
float total_on_grid(const std::vector<GradBuffer>& b, const common::AccumSpec& spec,
                    uint32_t blocks) {
    std::vector<int64_t> first(b.size() + 1, 0);
    for (std::size_t k = 0; k < b.size(); ++k) first[k + 1] = first[k] + grad_norm_leaves(b[k].n);
    const int64_t leaves = first.back();
    const cuda::GradNormMap m{b.data(), first.data(), static_cast<int64_t>(b.size()), leaves};
    std::vector<float> sums(static_cast<std::size_t>(leaves), NAN);
    std::vector<common::KahanSum> kahan(static_cast<std::size_t>(leaves));
    common::ExactAcc exact;
    common::exact_init(exact);
    float total = 0.0f;
    const cuda::GradNormLeaves out{sums.data(), kahan.data(), &exact, &total};
    common::for_each_thread(
        blocks, 32, [&](const GridPos& t) { cuda::grad_norm_leaves_body(t, m, spec.mode, out); });
    std::vector<uint32_t> order(static_cast<std::size_t>(leaves));
    common::permute_order(order.data(), leaves, spec.permute_key);
    if (spec.mode != common::AccumMode::kAtomic)
        cuda::grad_norm_combine_body(m, spec.mode, out, order.data(), &total);
    return total;
}

TEST(CudaGradNormBodies, EveryModeEqualsTheCpu) {
    for (const std::vector<int64_t>& sizes :
         {std::vector<int64_t>{0}, std::vector<int64_t>{1025, 0, 3}, {70000, 5, 2049}}) {
        std::vector<std::vector<float>> data;
        std::vector<GradBuffer> b;
        uint32_t tag = 1;
        for (int64_t n : sizes)
            data.push_back(test::uniform_floats(n, -3, 3, test::test_seed(), tag++));
        for (std::size_t k = 0; k < sizes.size(); ++k) b.push_back({data[k].data(), sizes[k]});
        for (const common::AccumSpec& spec : test::all_mode_specs(41)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            float want = NAN;
            cpu::grad_norm_sq_each(b.data(), static_cast<int64_t>(b.size()), &want, {spec});
            for (uint32_t blocks : {1u, 3u}) {
                const float got = total_on_grid(b, spec, blocks);
                if (spec.mode == common::AccumMode::kAtomic) {
                    EXPECT_NEAR(got, want, 1e-4 * std::fabs(want));
                } else {
                    EXPECT_EQ(test::bits(got), test::bits(want)) << blocks << " blocks";
                }
            }
        }
    }
}

TEST(CudaGradNormBodies, ClippingEqualsTheCpu) {
    std::vector<float> g = test::uniform_floats(3000, -2, 2, test::test_seed(), 9), h = g;
    const float total = 50.0f;  // norm 7.07 > 3: every element scaled
    const GradBuffer cpu_b{g.data(), 3000}, grid_b{h.data(), 3000};
    cpu::grad_clip_each(&cpu_b, 1, &total, 3.0f);
    common::for_each_thread(
        2, 32, [&](const GridPos& t) { cuda::grad_clip_body(t, grid_b, &total, 3.0f); });
    EXPECT_TRUE(test::bitwise_equal(h, g));
    EXPECT_EQ(g[0],
              test::uniform_floats(1, -2, 2, test::test_seed(), 9)[0] * (3.0f / std::sqrt(50.0f)));
}

}  // namespace
}  // namespace dt::kernels
