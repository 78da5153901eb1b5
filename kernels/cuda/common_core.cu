// SPDX-License-Identifier: MIT
// Device build of the shared numeric core: one kernel per header of kernels/common/ runs the
// functions on the device, and a host launcher copies the results back. The CUDA tests compare
// them bitwise with the host build (tests/kernels/cuda/common_device_test.cu).
#include "kernels/common/philox.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/cuda/common_core.h"

namespace dt::kernels::cuda {
namespace {

namespace c = dt::kernels::common;

__global__ void tree_combine_kernel(const float* partials, int64_t n, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *out = c::reduce_tree_combine(partials, n);
}

__global__ void philox_kernel(uint64_t seed, uint64_t first, int64_t n, uint32_t* out) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    c::Philox4 r = c::philox_draw(seed, c::RngStream::kTest, first + static_cast<uint64_t>(i));
    for (int k = 0; k < 4; ++k) out[4 * i + k] = r.v[k];
}

}  // namespace

// ---- launchers ----
cudaError_t tree_combine_on_device(const float* host_partials, int64_t n, float* host_out) {
    float* d_in = nullptr;
    float* d_out = nullptr;
    cudaError_t e = cudaMalloc(&d_in, sizeof(float) * (n > 0 ? n : 1));
    if (e == cudaSuccess) e = cudaMalloc(&d_out, sizeof(float));
    if (e == cudaSuccess && n > 0) {
        e = cudaMemcpy(d_in, host_partials, sizeof(float) * n, cudaMemcpyHostToDevice);
    }
    if (e == cudaSuccess) {
        tree_combine_kernel<<<1, 1>>>(d_in, n, d_out);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(host_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_out);
    return e;
}

cudaError_t philox_on_device(uint64_t seed, uint64_t first, int64_t n, uint32_t* host_out) {
    uint32_t* d_out = nullptr;
    cudaError_t e = cudaMalloc(&d_out, sizeof(uint32_t) * 4 * (n > 0 ? n : 1));
    if (e == cudaSuccess && n > 0) {
        philox_kernel<<<static_cast<unsigned>((n + 127) / 128), 128>>>(seed, first, n, d_out);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && n > 0) {
        e = cudaMemcpy(host_out, d_out, sizeof(uint32_t) * 4 * n, cudaMemcpyDeviceToHost);
    }
    cudaFree(d_out);
    return e;
}

}  // namespace dt::kernels::cuda
