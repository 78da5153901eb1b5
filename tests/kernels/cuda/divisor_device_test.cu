// SPDX-License-Identifier: MIT
// common::Divisor on the device (its multiply is __umulhi there) against the plain division:
// the divisors of the per-element kernels' shapes and the ones whose shifts are extreme, each
// with every numerator up to 2^20 and the top of the 32-bit range. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/common/divisor.h"
#include "tests/support/gpu_test.h"

namespace {

namespace c = dt::kernels::common;

__global__ void quotients(c::Divisor v, int64_t first, int64_t n, int64_t* q) {
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        q[i] = c::quotient(first + i, v);
}

TEST(DivisorDevice, QuotientsAreThePlainDivisions) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int64_t n = int64_t{1} << 20;
    dt::test::DeviceBlock out(sizeof(int64_t) * n);
    ASSERT_NE(out.p, nullptr);
    auto* dq = static_cast<int64_t*>(out.p);
    std::vector<int64_t> q(n);
    for (const int64_t d :
         {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{49}, int64_t{1024}, int64_t{3136},
          int64_t{641}, (int64_t{1} << 31) + 1, (int64_t{1} << 32) - 1, int64_t{1} << 32}) {
        const c::Divisor v = c::make_divisor(d);
        // Every numerator from 0, then the top of the 32-bit range and past it.
        for (const int64_t first : {int64_t{0}, (int64_t{1} << 32) - n / 2}) {
            quotients<<<256, 256>>>(v, first, n, dq);
            ASSERT_EQ(cudaMemcpy(q.data(), dq, sizeof(int64_t) * n, cudaMemcpyDeviceToHost),
                      cudaSuccess);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(q[i], (first + i) / d) << (first + i) << " / " << d;
        }
    }
}

}  // namespace
