// SPDX-License-Identifier: MIT
// The convolution's GEMM-shaped CUDA programs on the cuda device against the cpu with every tile
// shape (kernels/cuda/tile_gemm.h: the automatic choice takes one per GEMM, so the others would
// meet a GPU only in the benches): every mode's forward, dgrad and wgrad, and the exact mode's
// two ways with their rare paths (conv.wgrad's fold into the limbs, conv.dgrad's cut per tap).
// The DeviceOps fixture (tests/support/device_ops.h): on the stand-in the tile choice changes
// nothing (the cpu's kernels), so it runs once there.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/ops/conv2d.h"
#include "engine/ops/linear.h"
#if DT_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif
#include "tests/support/compare.h"
#include "tests/support/device_ops.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using namespace test;  // the DeviceOps fixture and its helpers (tests/support/device_ops.h)

#if DT_WITH_CUDA
namespace kc = kernels::cuda;
/// The tile choices a test runs: all of them on a real device, the automatic one on the stand-in;
/// the automatic choice again when the test ends, whatever happens in it.
struct EveryTile {
    std::vector<kc::TileChoice> choices{kc::TileChoice::kAuto};
    explicit EveryTile(Stand s) {
        if (s == Stand::kCuda)
            choices.insert(choices.end(),
                           {kc::TileChoice::kLarge, kc::TileChoice::kSmall, kc::TileChoice::kTiny});
    }
    ~EveryTile() { kc::set_tile_choice(kc::TileChoice::kAuto); }
};
#else
struct EveryTile {  // (no CUDA in this build: the stand-in only)
    std::vector<int> choices{0};
    explicit EveryTile(Stand) {}
};
#endif
template <class Choice>
void use_tile(Choice c) {
#if DT_WITH_CUDA
    kc::set_tile_choice(c);
#else
    (void)c;
#endif
}

TEST_P(DeviceOps, ConvAndLinearEveryModeWithEveryTileShape) {
    // A 3x3 'same' layer (dgrad as the transposed forward, cut per tap or split per kernel row),
    // a strided one (dgrad through the tap buffer) and a linear layer, each tile shape forced:
    // bitwise in the deterministic modes, close under atomic.
    const Tensor x = uniform({8, 32, 8, 8}, 20), w = uniform({48, 32, 3, 3}, 21);
    const Tensor xl = uniform({40, 96}, 22), wl = uniform({72, 96}, 23), bl = uniform({72}, 24);
    const EveryTile tiles(GetParam());
    for (const auto tile : tiles.choices) {
        use_tile(tile);
        SCOPED_TRACE(testing::Message() << "tile choice " << static_cast<int>(tile));
        for (Conv2dOptions o : {Conv2dOptions{1, 1}, Conv2dOptions{2, 1}}) {
            SCOPED_TRACE(testing::Message() << "stride " << o.stride);
            expect_device_equals_cpu(
                [&](const auto& in) { return conv2d(in[0], in[1], Tensor(), o); }, {x, w});
        }
        expect_device_equals_cpu([](const auto& in) { return linear(in[0], in[1], in[2]); },
                                 {xl, wl, bl});
    }
}

TEST_P(DeviceOps, ConvExactWgradWithLimbAtomics) {
    // DT_CUDA_EXACT_WGRAD=limbs's way on a GPU (kernels/cuda/runtime.h: a group of samples'
    // chains folded per weight, added into the accumulators' limbs with integer atomics): the
    // exact mode's bits, the cpu's.
    // (The stand-in runs the cpu's kernels: there the way changes nothing.)
#if DT_WITH_CUDA
    kc::set_exact_wgrad_way(kc::ExactWgradWay::kLimbAtomics);
    struct Restore {  // the default way for the tests after this one, whatever happens here
        ~Restore() { kc::set_exact_wgrad_way(kc::ExactWgradWay::kLeaves); }
    } restore;
#endif
    const Tensor x = uniform({6, 3, 7, 7}, 14), w = uniform({5, 3, 3, 3}, 15);
    const AccumSpec exact = kernels::common::accum_spec(AccumMode::kExact);
    for (Conv2dOptions o : {Conv2dOptions{1, 1}, Conv2dOptions{2, 0}}) {
        SCOPED_TRACE(o.stride);
        const Op op = [&](const auto& in) { return conv2d(in[0], in[1], Tensor(), o); };
        const auto want = run_op(Device::kCpu, exact, op, {x, w});
        const auto got = run_op(Device::kCuda, exact, op, {x, w});
        ASSERT_GE(got.size(), 3u);  // y, dx, dw
        EXPECT_TRUE(test::bitwise_equal(got[2], want[2])) << "the weight gradient";
    }
    // Enough tiles that a block folds several samples (wgrad_fold_group on a GPU of 132 SMs: 16
    // with the small tile, 8 with the large; more on smaller ones), the samples 2^-20 .. 2^20
    // apart, so that the running doubles move: the fold's moves and atomics on a GPU, with every
    // tile shape (the large one: 108 KiB of dynamic shared memory, two blocks a SM).
    std::vector<float> xs = test::signed_uniform(64 * 256 * 4 * 4, 16);
    for (std::size_t i = 0; i < xs.size(); ++i)
        xs[i] = std::ldexp(xs[i], static_cast<int>(i / (256 * 16) * 13 % 41) - 20);
    const Tensor xg = Tensor::from_vector({64, 256, 4, 4}, xs), wg = uniform({512, 256, 3, 3}, 17);
    const Op op = [](const auto& in) {
        return conv2d(in[0], in[1], Tensor(), Conv2dOptions{1, 1});
    };
    const auto want = run_op(Device::kCpu, exact, op, {xg, wg});
    const EveryTile tiles(GetParam());
    for (const auto tile : tiles.choices) {
        use_tile(tile);
        SCOPED_TRACE(testing::Message() << "tile choice " << static_cast<int>(tile));
        const auto got = run_op(Device::kCuda, exact, op, {xg, wg});
        ASSERT_GE(got.size(), 3u);
        EXPECT_TRUE(test::bitwise_equal(got[2], want[2])) << "the weight gradient, folded samples";
    }
}

TEST_P(DeviceOps, ConvExactDgradCutPerTap) {
    // conv.dgrad's exact mode on a 3x3 'same' layer (kernels/cuda/conv2d_dgrad_tiled_bodies.h:
    // the transposed forward cut per tap, each element's tap values folded in double): with the
    // first tap's weights scaled by 2^-60 and the last's by 2^50 (the fold is not exact: those
    // elements computed again) and with an infinite weight (infinite and NaN values; NaN pieces
    // where its tap has no output position): the cpu's bits, with every tile shape.
    std::vector<float> ws = test::signed_uniform(12 * 16 * 9, 18);
    for (std::size_t i = 0; i < ws.size(); ++i)
        ws[i] = std::ldexp(ws[i], i % 9 == 0 ? -60 : i % 9 == 8 ? 50 : 0);
    const Tensor x = uniform({4, 16, 6, 6}, 19);
    const AccumSpec exact = kernels::common::accum_spec(AccumMode::kExact);
    const Op op = [](const auto& in) {
        return conv2d(in[0], in[1], Tensor(), Conv2dOptions{1, 1});
    };
    // Every tile shape (the large one: dynamic shared memory, two blocks a SM), where these few
    // tiles would take the tiny one.
    const EveryTile tiles(GetParam());
    for (const auto tile : tiles.choices) {
        use_tile(tile);
        SCOPED_TRACE(testing::Message() << "tile choice " << static_cast<int>(tile));
        for (const bool with_inf : {false, true}) {
            SCOPED_TRACE(with_inf ? "an infinite weight" : "taps far apart");
            std::vector<float> w = ws;
            if (with_inf) w[9 * 5 + 4] = INFINITY;
            const Tensor wt = Tensor::from_vector({12, 16, 3, 3}, w);
            const auto want = run_op(Device::kCpu, exact, op, {x, wt});
            const auto got = run_op(Device::kCuda, exact, op, {x, wt});
            ASSERT_GE(got.size(), 2u);  // y, dx
            EXPECT_TRUE(test::bitwise_equal(got[1], want[1])) << "the input gradient";
        }
    }
}

}  // namespace
}  // namespace dt
