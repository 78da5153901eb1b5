// SPDX-License-Identifier: MIT
// hostcuda itself (built only with DT_ENABLE_CUDA=EMULATE): what it claims to emulate, each
// shown able to catch what it is there to catch.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

__global__ void count_visits(int* visits, unsigned* seen_threads) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(visits + i, 1);
    if (threadIdx.x == 0) seen_threads[blockIdx.x] = blockDim.x * gridDim.x;
}

/// Thread t writes shared[t], then (after a barrier or not) reads its neighbour's.
__global__ void neighbour(float* out, bool barrier) {
    __shared__ float shared[64];
    const unsigned t = threadIdx.x;
    shared[t] = static_cast<float>(blockIdx.x * 100 + t);
    if (barrier) __syncthreads();
    out[blockIdx.x * blockDim.x + t] = shared[(t + 1) % blockDim.x];
}

__global__ void dynamic_first(float* out) {
    extern __shared__ __align__(16) float dyn[];
    out[blockIdx.x] = dyn[threadIdx.x];  // read before any write: all-ones bytes
    __syncthreads();
}

__global__ void write_value(float* x, float v) { *x = v; }

__global__ void copy_value(const float* x, float* y) { *y = *x; }

__global__ void write_own_index(unsigned* out) { *out = blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void divergent_barrier() {
    if (threadIdx.x % 2 == 0) __syncthreads();
}

template <class T>
T* device_alloc(std::size_t n) {
    T* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
    return p;
}

TEST(Hostcuda, EveryThreadOfEveryBlockRunsOnce) {
    const unsigned blocks = 7, threads = 96;
    int* visits = device_alloc<int>(blocks * threads);
    unsigned* seen = device_alloc<unsigned>(blocks);
    ASSERT_EQ(cudaMemset(visits, 0, blocks * threads * sizeof(int)), cudaSuccess);
    count_visits<<<blocks, threads>>>(visits, seen);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<int> got(blocks * threads);
    std::vector<unsigned> got_seen(blocks);
    ASSERT_EQ(cudaMemcpy(got.data(), visits, got.size() * sizeof(int), cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got_seen.data(), seen, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(got, std::vector<int>(blocks * threads, 1));
    EXPECT_EQ(got_seen, std::vector<unsigned>(blocks, blocks * threads));
    cudaFree(visits);
    cudaFree(seen);
}

TEST(Hostcuda, ABarrierPublishesSharedWritesAndItsAbsenceShows) {
    const unsigned blocks = 2, threads = 64;
    float* out = device_alloc<float>(blocks * threads);
    std::vector<float> got(blocks * threads);
    for (bool barrier : {true, false}) {
        neighbour<<<blocks, threads>>>(out, barrier);
        ASSERT_EQ(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        int right = 0, nan = 0;
        for (unsigned b = 0; b < blocks; ++b) {
            for (unsigned t = 0; t < threads; ++t) {
                const float v = got[b * threads + t];
                right += v == static_cast<float>(b * 100 + (t + 1) % threads);
                nan += v != v;
            }
        }
        if (barrier) {
            EXPECT_EQ(right, static_cast<int>(blocks * threads));
        } else {
            // Threads run one at a time: each read of a neighbour not yet run finds the
            // all-ones bytes of fresh shared memory (NaN), per block.
            EXPECT_LT(right, static_cast<int>(blocks * threads)) << "a missing barrier went unseen";
            EXPECT_GE(nan, static_cast<int>(blocks)) << "fresh shared memory is not NaN";
        }
    }
    cudaFree(out);
}

TEST(Hostcuda, TheOrderSettingDecidesWhichThreadWritesLast) {
    // scripts/emulate.sh runs the device tests with DT_HOSTCUDA_ORDER=backward and shuffle too:
    // a kernel whose results hang on that order is one a GPU would not run the same twice.
    const char* order = std::getenv("DT_HOSTCUDA_ORDER");
    const std::string how = order != nullptr ? order : "forward";
    unsigned* out = device_alloc<unsigned>(1);
    std::set<unsigned> last;  // the last writer of each of 16 launches
    for (int launch = 0; launch < 16; ++launch) {
        write_own_index<<<5, 64>>>(out);
        unsigned got = 0;
        ASSERT_EQ(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_LT(got, 5u * 64u);
        last.insert(got);
    }
    if (how.rfind("shuffle", 0) == 0) {
        EXPECT_GT(last.size(), 1u) << "shuffled launches all ended with thread " << *last.begin();
    } else {
        EXPECT_EQ(last, std::set<unsigned>{how == "backward" ? 0u : 5u * 64u - 1u});
    }
    cudaFree(out);
}

TEST(Hostcuda, LaunchErrorsAreAGpus) {
    float* out = device_alloc<float>(1024);
    write_value<<<1, 1025>>>(out, 1.0f);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    write_value<<<0, 32>>>(out, 1.0f);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "cudaGetLastError clears the error";
    // Past 48 KiB of dynamic shared memory only with the kernel's attribute, up to the opt-in.
    const std::size_t big = std::size_t{64} << 10;
    dynamic_first<<<1, 32, big>>>(out);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    EXPECT_EQ(cudaFuncSetAttribute(dynamic_first, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(std::size_t{300} << 10)),
              cudaErrorInvalidValue);
    cudaGetLastError();
    ASSERT_EQ(cudaFuncSetAttribute(dynamic_first, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(big)),
              cudaSuccess);
    dynamic_first<<<2, 32, big>>>(out);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    float got[2] = {0, 0};
    ASSERT_EQ(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(got[0] != got[0] && got[1] != got[1]) << "fresh dynamic shared memory is not NaN";
    cudaFree(out);
}

TEST(Hostcuda, QueuedWorkRunsOnlyWhenWaitedFor) {
    float* x = device_alloc<float>(1);
    float* pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(&pinned, sizeof(float)), cudaSuccess);
    *pinned = -1.0f;
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    write_value<<<1, 1, 0, s>>>(x, 3.0f);
    ASSERT_EQ(cudaMemcpyAsync(pinned, x, sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
    EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    EXPECT_EQ(*pinned, -1.0f) << "a queued copy to page-locked memory ran before it was waited for";
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(*pinned, 3.0f);
    EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
    // A copy to pageable memory waits for the work before it, as the runtime's does.
    write_value<<<1, 1, 0, s>>>(x, 4.0f);
    float pageable = 0;
    ASSERT_EQ(cudaMemcpyAsync(&pageable, x, sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
    EXPECT_EQ(pageable, 4.0f);
    // An event completes when the queue reaches it, not before.
    cudaEvent_t e = nullptr;
    ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
    write_value<<<1, 1, 0, s>>>(x, 5.0f);
    ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
    EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
    ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
    EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
    cudaFreeHost(pinned);
    cudaFree(x);
}

TEST(Hostcuda, ANonBlockingStreamIsNotOrderedWithTheLegacyStream) {
    // The engine's stream is non-blocking (kernels/cuda/runtime.cu): work mixed between it and the
    // legacy default stream (cudaMemcpy, cudaMemset, launches without a stream) without a wait
    // between them reads what a GPU could leave it, so such a mix fails here too.
    float* x = device_alloc<float>(1);
    float* y = device_alloc<float>(1);
    const float one = 1.0f;
    ASSERT_EQ(cudaMemcpy(x, &one, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    cudaStream_t nb = nullptr, blocking = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
    float got = 0;
    // A legacy-stream copy does not wait for a non-blocking stream's kernel.
    write_value<<<1, 1, 0, nb>>>(x, 2.0f);
    ASSERT_EQ(cudaMemcpy(&got, x, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 1.0f) << "a legacy-stream copy waited for a non-blocking stream's kernel";
    EXPECT_EQ(cudaStreamQuery(nb), cudaErrorNotReady);
    ASSERT_EQ(cudaStreamSynchronize(nb), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&got, x, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 2.0f);
    // A non-blocking stream's kernel does not wait for a legacy-stream memset queued before it,
    // and a wait for its event runs its stream's work only.
    ASSERT_EQ(cudaMemsetAsync(x, 0, sizeof(float)), cudaSuccess);
    copy_value<<<1, 1, 0, nb>>>(x, y);
    cudaEvent_t e = nullptr;
    ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e, nb), cudaSuccess);
    ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
    EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady) << "the legacy stream's memset ran";
    ASSERT_EQ(cudaMemcpy(&got, y, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 2.0f) << "a non-blocking stream's kernel waited for a legacy-stream memset";
    ASSERT_EQ(cudaMemcpy(&got, x, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 0.0f);
    // A blocking stream and the legacy stream are ordered with each other.
    write_value<<<1, 1, 0, blocking>>>(x, 5.0f);
    ASSERT_EQ(cudaMemcpy(&got, x, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 5.0f) << "a legacy-stream copy did not wait for a blocking stream's kernel";
    // A pageable upload takes its bytes at once (the buffer is free again on return) but writes
    // them in the legacy stream's turn, which a non-blocking stream's kernel does not wait for.
    float upload = 3.0f;
    ASSERT_EQ(cudaMemcpy(x, &upload, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    upload = 4.0f;
    copy_value<<<1, 1, 0, nb>>>(x, y);
    ASSERT_EQ(cudaStreamSynchronize(nb), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&got, y, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 5.0f) << "a non-blocking stream's kernel waited for a legacy-stream upload";
    ASSERT_EQ(cudaMemcpy(&got, x, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 3.0f) << "the upload wrote the bytes its buffer held later, not when issued";
    cudaEventDestroy(e);
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(nb);
    cudaFree(y);
    cudaFree(x);
}

TEST(Hostcuda, ACopyOutsideAnAllocationOrAgainstItsDirectionIsRefused) {
    float* x = device_alloc<float>(4);
    float host[8] = {};
    EXPECT_EQ(cudaMemcpy(x, host, 4 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(x, host, 8 * sizeof(float), cudaMemcpyHostToDevice),
              cudaErrorInvalidValue);
    EXPECT_EQ(cudaMemcpy(x + 1, host, 4 * sizeof(float), cudaMemcpyHostToDevice),
              cudaErrorInvalidValue);
    cudaGetLastError();
    EXPECT_EQ(cudaMemcpy(host, x, 4 * sizeof(float), cudaMemcpyHostToDevice),
              cudaErrorInvalidValue)
        << "a host-to-device copy into host memory";
    cudaGetLastError();
    EXPECT_EQ(cudaMemsetAsync(x + 2, 0, 4 * sizeof(float)), cudaErrorInvalidValue);
    cudaGetLastError();
    cudaFree(x);
}

TEST(Hostcuda, FreshDeviceMemoryIsAllOnes) {
    // Large enough that the heap takes fresh (zeroed) pages from the system, which a kernel
    // counting on zeros would get here and not on a GPU.
    const std::size_t n = std::size_t{1} << 20;
    uint32_t* x = device_alloc<uint32_t>(n);
    std::vector<uint32_t> got(n, 0);
    ASSERT_EQ(cudaMemcpy(got.data(), x, n * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    std::size_t ones = 0;
    for (uint32_t v : got) ones += v == 0xffffffffu;
    EXPECT_EQ(ones, n) << "fresh device memory is not all-ones bytes (NaN floats)";
    cudaFree(x);
}

TEST(Hostcuda, FreeingWithWorkQueuedIsAnError) {
    float* x = device_alloc<float>(4);
    cudaStream_t st = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    write_value<<<1, 1, 0, st>>>(x, 1.0f);
    EXPECT_EQ(cudaFree(x), cudaErrorIllegalState) << "the queued write may still use x";
    EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalState);
    ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    EXPECT_EQ(cudaFree(x), cudaSuccess);
    cudaStreamDestroy(st);
}

/// A host function that counts its calls.
void count_call(void* calls) { ++*static_cast<int*>(calls); }

TEST(Hostcuda, EagerRunsWorkAtIssueUntilAHostFunction) {
    float* x = device_alloc<float>(2);
    cudaStream_t st = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    int calls = 0;
    dt::hostcuda::set_eager(true);
    write_value<<<1, 1, 0, st>>>(x, 1.0f);
    EXPECT_EQ(cudaStreamQuery(st), cudaSuccess) << "eager: the write ran when issued";
    ASSERT_EQ(cudaLaunchHostFunc(st, count_call, &calls), cudaSuccess);
    copy_value<<<1, 1, 0, st>>>(x, x + 1);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(cudaStreamQuery(st), cudaErrorNotReady) << "the host function holds the copy";
    ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    EXPECT_EQ(calls, 1);
    dt::hostcuda::set_eager(false);
    float got[2] = {};
    ASSERT_EQ(cudaMemcpy(got, x, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got[1], 1.0f);
    // Not eager: the work waits for a wait.
    write_value<<<1, 1, 0, st>>>(x, 2.0f);
    EXPECT_EQ(cudaStreamQuery(st), cudaErrorNotReady);
    ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    cudaFree(x);
    cudaStreamDestroy(st);
}

TEST(Hostcuda, OutOfMemoryIsAnAnswer) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::size_t{1} << 50), cudaErrorMemoryAllocation);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
}

TEST(HostcudaDeathTest, ABarrierSomeThreadsOfABlockSkipAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            divergent_barrier<<<1, 4>>>();
            cudaDeviceSynchronize();
        },
        "a barrier not reached by every thread of its block");
}

#if defined(__SANITIZE_ADDRESS__)
__global__ void write_past_end(float* x, int n) { x[n] = 1.0f; }

TEST(HostcudaDeathTest, UnderAddressSanitizerAKernelPastItsAllocationIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            float* x = device_alloc<float>(16);
            write_past_end<<<1, 1>>>(x, 16);
            cudaDeviceSynchronize();
        },
        "heap-buffer-overflow");
}

TEST(HostcudaDeathTest, UnderAddressSanitizerHostAccessToDeviceMemoryIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    float* x = device_alloc<float>(16);
    ASSERT_EQ(cudaMemset(x, 0, 16 * sizeof(float)), cudaSuccess);
    EXPECT_DEATH({ std::printf("%f\n", static_cast<double>(*(volatile float*)(x + 3))); },
                 "use-after-poison");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the memset may still be queued
    EXPECT_EQ(cudaFree(x), cudaSuccess);
}
#endif

}  // namespace
