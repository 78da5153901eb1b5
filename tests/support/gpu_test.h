// SPDX-License-Identifier: MIT
// What the GPU tests (tests/kernels/cuda/*_test.cu) share: skipping, with the reason, on a machine
// without a CUDA device (every CI machine), and device memory freed at the end of a scope.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>

#include "kernels/cuda/runtime.h"

namespace dt::test {

/// True when the CUDA runtime sees a device.
inline bool have_cuda_device() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// Raw device memory (kernels::cuda::device_malloc) for a test's scope; p is nullptr when out of
/// memory.
struct DeviceBlock {
    void* p = nullptr;
    explicit DeviceBlock(std::size_t bytes) : p(kernels::cuda::device_malloc(bytes)) {}
    ~DeviceBlock() { kernels::cuda::device_free(p); }
    DeviceBlock(DeviceBlock&& o) noexcept : p(o.p) { o.p = nullptr; }  // (in a vector)
    DeviceBlock(const DeviceBlock&) = delete;
    DeviceBlock& operator=(const DeviceBlock&) = delete;
};

}  // namespace dt::test

/// gtest prints a cudaError_t by its name (cudaErrorIllegalAddress, not 700): a failure says
/// what happened, and scripts/gtest_resume.py sees a sticky error that broke the context.
inline void PrintTo(cudaError_t e, std::ostream* os) { *os << cudaGetErrorName(e); }

/// First statement of a GPU test: skips it, saying why, when there is no CUDA device.
#define DT_SKIP_WITHOUT_CUDA_DEVICE() \
    if (!::dt::test::have_cuda_device()) GTEST_SKIP() << "no CUDA device on this machine"
