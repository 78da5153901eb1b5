// SPDX-License-Identifier: MIT
// The accumulation modes on the device must give the host's bits (exact: also for any thread
// count, and when every thread merges its accumulator into one with integer atomics; kahan: the
// same chunked recipe; permuted: the same order; a short exact sum in double where that is
// exact, accum_exact_short.h: the ExactAcc's bits, subnormals and overflow included). Skips
// without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/cuda/accum_core.h"
#include "tests/support/gpu_test.h"

namespace {

namespace c = dt::kernels::common;
namespace dc = dt::kernels::cuda;

// Wide magnitudes and signs, plus cancelling huge pairs, subnormals, a tie: rounding matters.
std::vector<float> inputs(int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        c::Philox4 r = c::philox_draw(5, c::RngStream::kTest, static_cast<uint64_t>(i));
        uint32_t e = r.v[1] % 255u;
        uint32_t u = (r.v[0] & 0x807fffffu) | (e << 23);
        std::memcpy(&x[static_cast<size_t>(i)], &u, 4);
    }
    if (n >= 4) x[0] = 1e30f, x[1] = 1.0f, x[2] = -1e30f, x[3] = 1.4e-45f;
    return x;
}

TEST(AccumDevice, ExactBitwiseEqualsHostForAnyThreadCount) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    for (int64_t n : {0, 1, 3, 255, 1000, 100003}) {
        std::vector<float> x = inputs(n);
        const float host = c::exact_sum(x.data(), n);
        for (int threads : {1, 7, 32, 128}) {
            float dev = 0.0f;
            ASSERT_EQ(dc::exact_sum_on_device(x.data(), n, threads, &dev), cudaSuccess);
            EXPECT_EQ(std::memcmp(&dev, &host, 4), 0) << "n = " << n << " threads = " << threads;
        }
    }
}

TEST(AccumDevice, KahanBitwiseEqualsHost) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    for (int64_t n : {0, 1, 255, 256, 257, 1000, 20000}) {
        std::vector<float> x = inputs(n);
        float dev = 0.0f;
        ASSERT_EQ(dc::kahan_sum_on_device(x.data(), n, 256, &dev), cudaSuccess);
        const float host = c::kahan_sum_chunked(x.data(), n, 256);
        EXPECT_EQ(std::memcmp(&dev, &host, 4), 0) << "n = " << n;
    }
}

TEST(AccumDevice, PermuteOrderEqualsHost) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int64_t n = 5001;
    const uint64_t key = c::permute_key(42, 3, 9);
    std::vector<uint32_t> dev(n), host(n);
    ASSERT_EQ(dc::permute_order_on_device(key, n, dev.data()), cudaSuccess);
    c::permute_order(host.data(), n, key);
    EXPECT_EQ(dev, host);
}

__global__ void merge_into_one(const float* x, int64_t n, c::ExactAcc* shared) {
    c::ExactAcc a;
    c::exact_init(a);
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        c::exact_add(a, x[i]);
    c::exact_atomic_merge(shared, a);  // every thread, in whatever order the hardware picks
}

__global__ void add_each_atomically(const float* x, int64_t n, c::ExactAcc* shared) {
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        c::exact_atomic_add(shared, x[i]);  // one input per add, in whatever order
}

/// kernel(x, n, acc) over 100003 inputs into one zeroed device accumulator (64 blocks of 128
/// threads) against the host's exact sum, bitwise.
void expect_the_host_sum(void (*kernel)(const float*, int64_t, c::ExactAcc*)) {
    const int64_t n = 100003;
    const std::vector<float> x = inputs(n);
    float* dx = nullptr;
    c::ExactAcc* dacc = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, sizeof(float) * n), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dacc, sizeof(c::ExactAcc)), cudaSuccess);
    cudaMemcpy(dx, x.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
    cudaMemset(dacc, 0, sizeof(c::ExactAcc));
    kernel<<<64, 128>>>(dx, n, dacc);
    c::ExactAcc got;
    ASSERT_EQ(cudaMemcpy(&got, dacc, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(dx);
    cudaFree(dacc);
    const float host = c::exact_sum(x.data(), n), dev = c::exact_value(got);
    EXPECT_EQ(std::memcmp(&dev, &host, 4), 0);
}

TEST(AccumDevice, ExactAtomicMergeOfEveryThreadEqualsTheHostSum) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    expect_the_host_sum(merge_into_one);
}

TEST(AccumDevice, ExactAtomicAddOfEveryInputEqualsTheHostSum) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    expect_the_host_sum(add_each_atomically);
}

TEST(AccumDevice, AtomicAddLosesNoUpdate) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    float dev = 0.0f;
    ASSERT_EQ(dc::atomic_count_on_device(100000, &dev), cudaSuccess);
    EXPECT_EQ(dev, 100000.0f);  // integer-valued partial sums are exact in any order
}

__global__ void short_sums(const float* x, int terms, int sets, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= sets) return;
    out[i] = c::exact_sum_of([&](auto&& add) {
        for (int k = 0; k < terms; ++k) add(x[i * terms + k]);
    });
}

TEST(AccumDevice, ShortExactSumsEqualTheExactAcc) {
    // Sets of 9 terms (a 3x3 tap sum) with exponent spans 0..39 from bases across the range,
    // subnormals and the top binades included, so both of exact_sum_of's paths run; and sets
    // with a zero, a tie, an overflow and the special values.
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int terms = 9, sets = 8192;
    std::mt19937_64 rng(3);
    std::vector<float> x(static_cast<std::size_t>(terms) * sets);
    for (int i = 0; i < sets; ++i) {
        const uint32_t span = static_cast<uint32_t>(i % 40),
                       base = static_cast<uint32_t>(rng() % (255 - span));
        for (int k = 0; k < terms; ++k) {
            const uint32_t e = base + static_cast<uint32_t>(rng() % (span + 1));
            const uint32_t u = (static_cast<uint32_t>(rng()) & 0x807fffffu) | (e << 23);
            std::memcpy(&x[static_cast<std::size_t>(i * terms + k)], &u, 4);
        }
    }
    const float inf = std::numeric_limits<float>::infinity(),
                mx = std::numeric_limits<float>::max();
    const float specials[][9] = {{1.0f, 5.9604645e-8f, 0, 0, 0, 0, 0, 0, 0},  // 1 + 2^-24: a tie
                                 {mx, mx, 0, 0, 0, 0, 0, 0, 0},
                                 {-0.0f, -0.0f, -0.0f, 0, 0, 0, 0, 0, -0.0f},
                                 {1.0f, inf, 0, 0, 0, 0, 0, 0, 0},
                                 {inf, -inf, 0, 0, 0, 0, 0, 0, 0},
                                 {std::nanf(""), 0, 0, 0, 0, 0, 0, 0, 0},
                                 {1.4e-45f, -2.8e-45f, 1e-40f, 0, 0, 0, 0, 0, 0}};
    for (std::size_t j = 0; j < sizeof specials / sizeof specials[0]; ++j)
        std::memcpy(&x[j * terms], specials[j], sizeof specials[j]);
    float *dx = nullptr, *dout = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, sizeof(float) * x.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dout, sizeof(float) * sets), cudaSuccess);
    cudaMemcpy(dx, x.data(), sizeof(float) * x.size(), cudaMemcpyHostToDevice);
    short_sums<<<(sets + 127) / 128, 128>>>(dx, terms, sets, dout);
    std::vector<float> got(static_cast<std::size_t>(sets));
    ASSERT_EQ(cudaMemcpy(got.data(), dout, sizeof(float) * sets, cudaMemcpyDeviceToHost),
              cudaSuccess);
    cudaFree(dx);
    cudaFree(dout);
    for (int i = 0; i < sets; ++i) {
        const float want = c::exact_sum(&x[static_cast<std::size_t>(i * terms)], terms);
        ASSERT_EQ(std::memcmp(&got[static_cast<std::size_t>(i)], &want, 4), 0) << "set " << i;
    }
}

}  // namespace
