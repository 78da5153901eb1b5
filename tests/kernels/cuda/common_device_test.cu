// SPDX-License-Identifier: MIT
// The shared numeric core on the device must give the host's bits. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/cuda/common_core.h"
#include "tests/support/gpu_test.h"

namespace {

namespace c = dt::kernels::common;

TEST(CommonDevice, TreeCombineBitwiseEqualsHost) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    std::vector<float> p(1000);
    for (int i = 0; i < 1000; ++i) p[i] = (i % 7 - 3) * 1.0e6f / (i + 1) + 1e-3f * i;
    for (int64_t n : {1, 2, 3, 255, 256, 257, 1000}) {
        float dev = 0.0f;
        ASSERT_EQ(dt::kernels::cuda::tree_combine_on_device(p.data(), n, &dev), cudaSuccess);
        float host = c::reduce_tree_combine(p.data(), n);
        EXPECT_EQ(std::memcmp(&dev, &host, 4), 0) << "n = " << n;
    }
}

TEST(CommonDevice, PhiloxBitwiseEqualsHost) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int64_t n = 4096;
    std::vector<uint32_t> dev(4 * n);
    ASSERT_EQ(dt::kernels::cuda::philox_on_device(42, 7, n, dev.data()), cudaSuccess);
    for (int64_t i = 0; i < n; ++i) {
        c::Philox4 h = c::philox_draw(42, c::RngStream::kTest, 7 + static_cast<uint64_t>(i));
        for (int k = 0; k < 4; ++k) ASSERT_EQ(dev[4 * i + k], h.v[k]) << "i = " << i;
    }
}

}  // namespace
