// SPDX-License-Identifier: MIT
// read_later / take_read (kernels/cuda/read_later.cu) on a GPU: a read returns while the stream is
// still busy (it does not wait for the device; the stream held by a test::StreamGate, not by time), its value is the one the device held when the
// stream reached it, taking it after a wait does not wait again, every slot of the ring gives
// its own value, and a ticket whose slot came round again is an error, not a wrong value.
// Skips without a CUDA device.
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

/// Writes `value` to *out.
__global__ void write_value(float* out, float value) { *out = value; }

TEST(CudaReadLater, ReturnsWithoutWaitingAndGivesTheValueTheStreamReached) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    test::FastDevice fast;  // (emulated: work runs as it is issued, unless the gate holds it)
    DeviceBlock x(sizeof(float));
    ASSERT_NE(x.p, nullptr);
    float* xp = static_cast<float*>(x.p);
    const float one = 1.0f;
    copy_from_host(xp, &one, sizeof one);
    float warm = 0;  // the first read allocates the page-locked slots, which may synchronise
    take_read(read_later(xp, sizeof warm), &warm, sizeof warm);
    synchronize();
    uint64_t ticket = 0;
    {
        // The stream is held until open(), so the read issued behind the gate is still queued
        // when read_later returns, unless read_later waited for the stream.
        test::StreamGate gate(stream());
        write_value<<<1, 1, 0, stream()>>>(xp, 42.0f);
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        ticket = read_later(xp, sizeof(float));
        ASSERT_NE(ticket, 0u);
        EXPECT_EQ(cudaStreamQuery(stream()), cudaErrorNotReady)
            << "read_later waited for the work issued before it";
        cudaGetLastError();  // "not ready" is an answer, not an error to keep
        // A later write on the stream does not reach the read issued before it.
        write_value<<<1, 1, 0, stream()>>>(xp, -5.0f);
        gate.open();
    }
    float got = 0;
    take_read(ticket, &got, sizeof got);
    EXPECT_EQ(got, 42.0f);
    synchronize();
    EXPECT_EQ(take_error(), "");
}

TEST(CudaReadLater, EverySlotGivesItsOwnValueAndAReusedSlotIsAnError) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int n = 3 * kReadLaterSlots;
    DeviceBlock block(n * sizeof(float));
    ASSERT_NE(block.p, nullptr);
    float* d = static_cast<float*>(block.p);
    std::vector<float> values(n);
    for (int i = 0; i < n; ++i) values[i] = 0.5f * static_cast<float>(i) - 3.0f;
    copy_from_host(d, values.data(), n * sizeof(float));
    // A ring's worth of reads in flight at once, taken after one wait covered them all.
    for (int round = 0; round < 3; ++round) {
        std::vector<uint64_t> tickets;
        for (int k = 0; k < kReadLaterSlots; ++k)
            tickets.push_back(read_later(d + round * kReadLaterSlots + k, sizeof(float)));
        synchronize();
        for (int k = 0; k < kReadLaterSlots; ++k) {
            float got = 0;
            take_read(tickets[k], &got, sizeof got);
            EXPECT_EQ(got, values[round * kReadLaterSlots + k])
                << "round " << round << " read " << k;
        }
    }
    EXPECT_EQ(take_error(), "");
    // Taken after kReadLaterSlots more reads: its slot holds another read now.
    const uint64_t stale = read_later(d, sizeof(float));
    for (int k = 0; k < kReadLaterSlots; ++k) read_later(d + 1, sizeof(float));
    float got = -1.0f;
    take_read(stale, &got, sizeof got);
    EXPECT_EQ(got, -1.0f);
    EXPECT_NE(take_error().find("taken too late"), std::string::npos);
    // More bytes than a slot holds: not issued.
    DeviceBlock big(2 * kReadLaterMaxBytes);
    EXPECT_EQ(read_later(big.p, kReadLaterMaxBytes + 1), 0u);
    EXPECT_NE(take_error(), "");
    synchronize();
}

}  // namespace
}  // namespace dt::kernels::cuda
