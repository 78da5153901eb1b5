// SPDX-License-Identifier: MIT
// The launch profile (kernels/cuda/launch_profile.cu) on a GPU: every launch a launcher checks
// while it is on comes back once, in issue order, named, with its time on the stream (a kernel
// that holds the device for a known time shows that time, not the hold before it); launches
// after take_launch_profile are not recorded. Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/add.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/relu.h"
#include "tests/support/gpu_test.h"

namespace dt::kernels::cuda {
namespace {

using test::DeviceBlock;

TEST(CudaLaunchProfile, EveryCheckedLaunchOnceInOrderWithItsTime) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int64_t n = 1 << 20;
    DeviceBlock x(n * sizeof(float)), y(n * sizeof(float));
    ASSERT_NE(x.p, nullptr);
    ASSERT_NE(y.p, nullptr);
    float* xp = static_cast<float*>(x.p);
    float* yp = static_cast<float*>(y.p);
    device_zero(xp, n * sizeof(float));
    synchronize();
    start_launch_profile(/*hold_ms=*/10);
    EXPECT_TRUE(launch_profile_on());
    relu_forward(xp, yp, n);
    hold_device(3.0);
    add_forward(xp, yp, yp, n);
    const std::vector<LaunchTime> got = take_launch_profile();
    EXPECT_FALSE(launch_profile_on());
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].name, "relu_forward");
    EXPECT_EQ(got[1].name, "hold_device");
    EXPECT_EQ(got[2].name, "add_forward");
    EXPECT_GT(got[1].ms, 2.9);
    EXPECT_GE(got[2].ms, 0.0);
#if !defined(DT_HOSTCUDA)  // (emulated on the host, a relu over 2^20 floats takes its time)
    EXPECT_LT(got[0].ms, 2.0) << "the hold before the first launch counted as its time";
    EXPECT_LT(got[1].ms, 6.0);
#endif
    relu_forward(xp, yp, n);  // the profile is off: nothing recorded
    EXPECT_TRUE(take_launch_profile().empty());
    synchronize();
    EXPECT_EQ(take_error(), "");
}

}  // namespace
}  // namespace dt::kernels::cuda
