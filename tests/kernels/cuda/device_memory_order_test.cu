// SPDX-License-Identifier: MIT
// What the CUDA runtime layer (kernels/cuda/runtime.cu, launch.cuh) must get right on a real GPU
// that the kernels' host tests cannot see. The scratch grows without freeing a block that work
// still queued on the stream uses: CUDA does not promise that cudaFree waits for it, and the
// emulated device refuses such a free. The large tile's cut programs get their dynamic shared
// memory in a process that never probed the device (the GPU tests run so): a refusal made before
// the device's facts were known must not hold the small tile for the whole process. Skips
// without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "tests/support/compare.h"
#include "tests/support/gpu_test.h"
#include "tests/support/rng.h"

namespace dt::kernels::cuda {
namespace {

using test::DeviceBlock;
namespace c = common;

TEST(CudaScratch, GrowsWithoutFreeingABlockQueuedWorkUses) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const std::size_t small = 1 << 16, large = 1 << 22;
    void* first = scratch(small);
    ASSERT_NE(first, nullptr);
    device_zero(first, small);  // queued work on the old block
    void* grown = scratch(large);  // a larger block: the old one is freed
    ASSERT_NE(grown, nullptr);
    std::vector<float> ones(large / 4, 1.0f), got(large / 4, 0.0f);
    copy_from_host(grown, ones.data(), large);
    copy_to_host(got.data(), grown, large);
    EXPECT_TRUE(test::bitwise_equal(got, ones));
    EXPECT_EQ(take_error(), "");
}

/// The names of the launches `run` makes (the launch profile), with the tile choice `tile`.
template <class Run>
std::vector<std::string> launches(TileChoice tile, const Run& run) {
    const TileChoice before = tile_choice();
    set_tile_choice(tile);
    start_launch_profile(/*hold_ms=*/0);
    run();
    std::vector<std::string> names;
    for (const LaunchTime& l : take_launch_profile()) names.push_back(l.name);
    set_tile_choice(before);
    return names;
}

bool ran(const std::vector<std::string>& names, const std::string& what) {
    for (const std::string& n : names)
        if (n.find(what) != std::string::npos) return true;
    return false;
}

TEST(CudaLargeTile, ExactCutProgramsTakeTheLargeTileWithoutAProbe) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    // A 3x3 'same' layer: conv.dgrad's exact mode is the transposed forward cut per tap, and
    // conv.wgrad's exact mode with limb atomics folds per element (both 76 KiB or more of shared
    // memory a block with the large tile: past the 48 KiB a kernel has without opting in).
    Conv2dParams p{
        .n = 4, .ci = 24, .h = 10, .w = 10, .co = 40, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
    p.ho = 10, p.wo = 10;
    p.accum = c::accum_spec(c::AccumMode::kExact);
    const std::vector<float> x = test::uniform_floats(p.n * p.ci * 100, -1, 1, 5, 1),
                             dy = test::uniform_floats(p.n * p.co * 100, -1, 1, 5, 2),
                             w = test::uniform_floats(p.co * p.ci * 9, -1, 1, 5, 3);
    DeviceBlock dx(4 * x.size()), dw(4 * w.size()), dev_x(4 * x.size()), dev_dy(4 * dy.size()),
        dev_w(4 * w.size());
    copy_from_host(dev_x.p, x.data(), 4 * x.size());
    copy_from_host(dev_dy.p, dy.data(), 4 * dy.size());
    copy_from_host(dev_w.p, w.data(), 4 * w.size());
    const auto* fx = static_cast<const float*>(dev_x.p);
    const auto* fdy = static_cast<const float*>(dev_dy.p);
    const auto* fw = static_cast<const float*>(dev_w.p);
    std::vector<float> got_dx[2], got_dw[2];
    const TileChoice tiles[2] = {TileChoice::kLarge, TileChoice::kSmall};
    for (int k = 0; k < 2; ++k) {
        const std::vector<std::string> names = launches(tiles[k], [&] {
            conv2d_backward_data(fdy, fw, static_cast<float*>(dx.p), p);
            conv2d_backward_weight_exact_limbs(fx, fdy, static_cast<float*>(dw.p), p);
        });
        const std::string tile = k == 0 ? "large tile" : "small tile";
        EXPECT_TRUE(ran(names, "conv2d_backward_data (exact, cut per tap, " + tile + ")"))
            << tile;
        EXPECT_TRUE(ran(names, "conv2d_backward_weight (exact, limb atomics, " + tile + ")"))
            << tile;
        got_dx[k].resize(x.size());
        got_dw[k].resize(w.size());
        copy_to_host(got_dx[k].data(), dx.p, 4 * x.size());
        copy_to_host(got_dw[k].data(), dw.p, 4 * w.size());
    }
    // The tile shape changes where operands come from, never a bit.
    EXPECT_TRUE(test::bitwise_equal(got_dx[0], got_dx[1]));
    EXPECT_TRUE(test::bitwise_equal(got_dw[0], got_dw[1]));
    EXPECT_EQ(take_error(), "");
}

}  // namespace
}  // namespace dt::kernels::cuda
