// SPDX-License-Identifier: MIT
// Device build of the accumulation modes: each kernel runs functions of kernels/common/ on the
// device, a host launcher copies the result back; tests/kernels/cuda/accum_device_test.cu compares
// them bitwise with the host build.
#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/cuda/accum_core.h"
#include "kernels/cuda/launch_shape.h"

namespace dt::kernels::cuda {
namespace {

namespace c = dt::kernels::common;
constexpr int kMaxThreads = 128;
static_assert(kMaxThreads <= static_cast<int>(kMaxBlockThreads));

__global__ void exact_sum_kernel(const float* x, int64_t n, float* out) {
    __shared__ c::ExactAcc part[kMaxThreads];
    c::ExactAcc a;
    c::exact_init(a);
    const int t = static_cast<int>(threadIdx.x);
    c::exact_add_array(a, x + t, (n - t + blockDim.x - 1) / blockDim.x, blockDim.x);
    part[t] = a;
    __syncthreads();
    if (t == 0) {
        for (unsigned k = 1; k < blockDim.x; ++k) c::exact_merge(a, part[k]);
        *out = c::exact_value(a);
    }
}

__global__ void kahan_sum_kernel(const float* x, int64_t n, int64_t chunk, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *out = c::kahan_sum_chunked(x, n, chunk);
}

__global__ void permute_order_kernel(uint64_t key, int64_t n, uint32_t* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c::permute_order(out, n, key);
}

__global__ void atomic_count_kernel(int64_t n, float* out) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) c::atomic_add_float(out, 1.0f);
}

// Copies n items to a fresh device buffer (at least one item is allocated).
template <class T>
cudaError_t to_device(const T* host, int64_t n, T** dev) {
    cudaError_t e = cudaMalloc(dev, sizeof(T) * static_cast<size_t>(n > 0 ? n : 1));
    if (e == cudaSuccess && n > 0 && host != nullptr) {
        e = cudaMemcpy(*dev, host, sizeof(T) * static_cast<size_t>(n), cudaMemcpyHostToDevice);
    }
    return e;
}

}  // namespace

// ---- launchers ----
cudaError_t exact_sum_on_device(const float* host_x, int64_t n, int threads, float* host_out) {
    if (threads < 1 || threads > kMaxThreads) return cudaErrorInvalidValue;
    float* d_x = nullptr;
    float* d_out = nullptr;
    cudaError_t e = to_device(host_x, n, &d_x);
    if (e == cudaSuccess) e = cudaMalloc(&d_out, sizeof(float));
    if (e == cudaSuccess) {
        exact_sum_kernel<<<1, threads>>>(d_x, n, d_out);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(host_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_out);
    return e;
}

cudaError_t kahan_sum_on_device(const float* host_x, int64_t n, int64_t chunk, float* host_out) {
    float* d_x = nullptr;
    float* d_out = nullptr;
    cudaError_t e = to_device(host_x, n, &d_x);
    if (e == cudaSuccess) e = cudaMalloc(&d_out, sizeof(float));
    if (e == cudaSuccess) {
        kahan_sum_kernel<<<1, 1>>>(d_x, n, chunk, d_out);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(host_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_out);
    return e;
}

cudaError_t permute_order_on_device(uint64_t key, int64_t n, uint32_t* host_out) {
    uint32_t* d_out = nullptr;
    cudaError_t e = to_device<uint32_t>(nullptr, n, &d_out);
    if (e == cudaSuccess) {
        permute_order_kernel<<<1, 1>>>(key, n, d_out);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && n > 0) {
        e = cudaMemcpy(host_out, d_out, sizeof(uint32_t) * static_cast<size_t>(n),
                       cudaMemcpyDeviceToHost);
    }
    cudaFree(d_out);
    return e;
}

cudaError_t atomic_count_on_device(int64_t n, float* host_out) {
    float* d_out = nullptr;
    const float zero = 0.0f;
    cudaError_t e = to_device(&zero, 1, &d_out);
    if (e == cudaSuccess && n > 0) {
        atomic_count_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(n, d_out);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(host_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_out);
    return e;
}

}  // namespace dt::kernels::cuda
