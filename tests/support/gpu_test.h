// SPDX-License-Identifier: MIT
// What the GPU tests (tests/kernels/cuda/*_test.cu) share: skipping, with the reason, on a machine
// without a CUDA device (every CI machine), device memory freed at the end of a scope, and a gate
// that holds a stream until the test opens it.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
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

/// Holds a stream at the point of its construction until open(): a host function on the stream
/// waits for it, so that the work issued after it cannot run before open() however fast the
/// device or slow the host. A test of "returns without waiting for the device" holds the stream
/// with it instead of racing a spinning kernel. A broken wait cannot hang the test: the gate opens
/// by itself after 30 s (and the test's check of the stream then fails). The destructor opens it
/// and waits for the stream.
class StreamGate {
  public:
    explicit StreamGate(cudaStream_t s) : stream_(s) {
        if (cudaLaunchHostFunc(stream_, &StreamGate::hold, this) != cudaSuccess) open_ = true;
    }
    ~StreamGate() {
        open();
        cudaStreamSynchronize(stream_);
    }
    void open() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            open_ = true;
        }
        cv_.notify_all();
    }
    StreamGate(const StreamGate&) = delete;
    StreamGate& operator=(const StreamGate&) = delete;

  private:
    static void hold(void* self) {
        auto* g = static_cast<StreamGate*>(self);
        std::unique_lock<std::mutex> lock(g->mu_);
        g->cv_.wait_for(lock, std::chrono::seconds(30), [g] { return g->open_; });
    }
    cudaStream_t stream_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
};

/// For a test's scope, the emulated device (hostcuda) runs work as soon as it is issued, as a
/// GPU far ahead of a loaded host may (dt::hostcuda::set_eager); nothing on a GPU.
class FastDevice {
  public:
    FastDevice() { eager(true); }
    ~FastDevice() { eager(false); }
    FastDevice(const FastDevice&) = delete;
    FastDevice& operator=(const FastDevice&) = delete;

  private:
    static void eager(bool on) {
#if defined(DT_HOSTCUDA)
        dt::hostcuda::set_eager(on);
#else
        (void)on;
#endif
    }
};

}  // namespace dt::test

/// gtest prints a cudaError_t by its name (cudaErrorIllegalAddress, not 700): a failure says
/// what happened, and scripts/gtest_resume.py sees a sticky error that broke the context.
inline void PrintTo(cudaError_t e, std::ostream* os) { *os << cudaGetErrorName(e); }

/// First statement of a GPU test: skips it, saying why, when there is no CUDA device.
#define DT_SKIP_WITHOUT_CUDA_DEVICE() \
    if (!::dt::test::have_cuda_device()) GTEST_SKIP() << "no CUDA device on this machine"
