// SPDX-License-Identifier: MIT
// copy_from_host (kernels/cuda/upload.cu) on a GPU: an upload returns while the stream is still
// busy (it does not wait for the device; the stream held by a test::StreamGate, not by time), the host buffer may be overwritten as soon as it
// returns, and uploads of every size, cycling through the staging buffers and growing them,
// arrive whole and in issue order. Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "tests/support/gpu_test.h"

namespace dt::kernels::cuda {
namespace {

using test::DeviceBlock;

std::vector<int32_t> pattern(std::size_t n, int32_t salt) {
    std::vector<int32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i * 2654435761u) ^ salt;
    return v;
}

TEST(CudaUpload, ReturnsWithoutWaitingAndTheHostBufferIsFreeAtOnce) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    test::FastDevice fast;  // (emulated: work runs as it is issued, unless the gate holds it)
    DeviceBlock data(4096 * sizeof(int32_t));
    ASSERT_NE(data.p, nullptr);
    // Uploads of this size through every staging buffer first (more uploads than buffers): the
    // first use of a buffer allocates page-locked memory, which may synchronise the device.
    std::vector<int32_t> host = pattern(4096, 7);
    for (int k = 0; k < 16; ++k) copy_from_host(data.p, host.data(), host.size() * sizeof(int32_t));
    synchronize();
    const std::vector<int32_t> want = host;
    {
        // The stream is held until open(): the upload below is issued behind the gate, so it is
        // still queued when copy_from_host returns, unless copy_from_host waited for the stream.
        test::StreamGate gate(stream());
        copy_from_host(data.p, host.data(), host.size() * sizeof(int32_t));
        EXPECT_EQ(cudaStreamQuery(stream()), cudaErrorNotReady)
            << "copy_from_host waited for the work issued before it";
        cudaGetLastError();  // "not ready" is an answer, not an error to keep
        for (int32_t& x : host) x = -1;  // the caller may reuse its buffer at once
        gate.open();
    }
    std::vector<int32_t> got(host.size());
    copy_to_host(got.data(), data.p, got.size() * sizeof(int32_t));
    EXPECT_EQ(got, want);
    EXPECT_EQ(take_error(), "");
}

TEST(CudaUpload, ManyUploadsOfEverySizeArriveInOrder) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    // Sizes below, at and above the first staging size, growing and shrinking, more uploads than
    // staging buffers, the same destination written twice in a row (the later must win), and
    // one above the staged maximum (copied directly).
    const std::vector<std::size_t> counts = {1,     3,     16384, 16385,   300000,   7,
                                             70000, 70000, 1,     4 << 20, 17000000, 5};
    std::vector<DeviceBlock> blocks;
    blocks.reserve(counts.size());
    std::vector<std::vector<int32_t>> want;
    for (std::size_t k = 0; k < counts.size(); ++k) {
        blocks.emplace_back(counts[k] * sizeof(int32_t));
        ASSERT_NE(blocks.back().p, nullptr);
        std::vector<int32_t> first = pattern(counts[k], static_cast<int32_t>(100 + k));
        copy_from_host(blocks[k].p, first.data(), first.size() * sizeof(int32_t));
        std::vector<int32_t> second = pattern(counts[k], static_cast<int32_t>(200 + k));
        copy_from_host(blocks[k].p, second.data(), second.size() * sizeof(int32_t));
        want.push_back(second);
    }
    for (std::size_t k = 0; k < counts.size(); ++k) {
        std::vector<int32_t> got(counts[k]);
        copy_to_host(got.data(), blocks[k].p, got.size() * sizeof(int32_t));
        EXPECT_EQ(got, want[k]) << "upload " << k << " of " << counts[k] << " ints";
    }
    EXPECT_EQ(take_error(), "");
}

}  // namespace
}  // namespace dt::kernels::cuda
