// SPDX-License-Identifier: MIT
// DT_CUDA_POISON=1 (kernels/cuda/runtime.h): scratch() fills what it hands out with all-ones
// bytes on every call, so that a launcher reading scratch it did not write in that call sees NaN
// and not the previous call's values. Runs only where the variable is set (scripts/emulate.sh
// and scripts/gpu_check.sh set it for a run of the GPU tests); skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/runtime.h"
#include "tests/support/gpu_test.h"

namespace dt::kernels::cuda {
namespace {

TEST(CudaPoison, ScratchIsAllOnesOnEveryCall) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    if (!poison_setting()) GTEST_SKIP() << "DT_CUDA_POISON=1 is not set";
    const std::size_t n = 1000;
    for (int call = 0; call < 2; ++call) {  // the second call reuses the block the first wrote
        void* s = scratch(n * sizeof(uint32_t));
        ASSERT_NE(s, nullptr);
        std::vector<uint32_t> got(n, 0);
        copy_to_host(got.data(), s, n * sizeof(uint32_t));
        std::size_t ones = 0;
        for (uint32_t x : got) ones += x == 0xffffffffu;
        EXPECT_EQ(ones, n) << "call " << call;
        device_zero(s, n * sizeof(uint32_t));
    }
    synchronize();
    EXPECT_EQ(take_error(), "");
}

}  // namespace
}  // namespace dt::kernels::cuda
