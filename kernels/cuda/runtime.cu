// SPDX-License-Identifier: MIT
// kernels/cuda/runtime.h over the CUDA runtime API.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"

namespace dt::kernels::cuda {

namespace {

std::mutex& error_mutex() {
    static std::mutex mu;
    return mu;
}
std::string& first_error() {
    static std::string e;
    return e;
}


}  // namespace

void note_error(const char* what, int code) {
    const cudaError_t e = static_cast<cudaError_t>(code);
    std::lock_guard<std::mutex> lock(error_mutex());
    if (first_error().empty()) {
        first_error() =
            std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
    }
}

std::string take_error() {
    // A launch error not yet seen by a launcher's check, or an asynchronous one.
    const cudaError_t pending = cudaGetLastError();
    if (pending != cudaSuccess) note_error("kernel", static_cast<int>(pending));
    std::lock_guard<std::mutex> lock(error_mutex());
    std::string e;
    e.swap(first_error());
    return e;
}

namespace {
std::atomic<int>& probed_multiprocessors() {
    static std::atomic<int> n{0};
    return n;
}
std::atomic<std::size_t>& probed_block_shared_optin() {
    static std::atomic<std::size_t> n{0};
    return n;
}
/// An empty kernel, asked whether the build's code runs on the device (probe_device).
__global__ void code_probe() {}
}  // namespace

namespace {
/// The current device's facts, when no probe has stored them yet: a "no" made from a zero read
/// before the probe (no large tile, no SMs to fill) would otherwise hold for the whole process.
void learn_current_device() {
    if (probed_multiprocessors().load(std::memory_order_relaxed) != 0) return;
    int ordinal = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&ordinal) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
        cudaGetLastError();  // no device: not an error to keep (the next call asks again)
        return;
    }
    probed_block_shared_optin().store(prop.sharedMemPerBlockOptin);
    probed_multiprocessors().store(prop.multiProcessorCount);
}
}  // namespace

int device_multiprocessors() {
    learn_current_device();
    return probed_multiprocessors().load(std::memory_order_relaxed);
}
std::size_t device_block_shared_optin() {
    learn_current_device();
    return probed_block_shared_optin().load(std::memory_order_relaxed);
}

bool probe_device(int local_rank, DeviceInfo* info, std::string* why) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError();  // not sticky: clear it
        if (e == cudaErrorInsufficientDriver) {
            *why = "no NVIDIA driver on this machine, or one older than this build's CUDA " +
                   std::to_string(CUDART_VERSION / 1000) + "." +
                   std::to_string(CUDART_VERSION % 1000 / 10) + " runtime";
        } else if (e == cudaErrorNoDevice || count == 0) {
            *why = "the NVIDIA driver sees no GPU";
        } else {
            *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        }
        return false;
    }
    const int ordinal = (local_rank > 0 ? local_rank : 0) % count;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess ||
        cudaSetDevice(ordinal) != cudaSuccess) {
        const cudaError_t e2 = cudaGetLastError();
        *why = "device " + std::to_string(ordinal) + ": " + cudaGetErrorName(e2) + ": " +
               cudaGetErrorString(e2);
        return false;
    }
    info->ordinal = ordinal;
    info->count = count;
    info->name = prop.name;
    info->major = prop.major;
    info->minor = prop.minor;
    info->memory_bytes = prop.totalGlobalMem;
    info->multiprocessors = prop.multiProcessorCount;
    probed_block_shared_optin().store(prop.sharedMemPerBlockOptin);
    probed_multiprocessors().store(prop.multiProcessorCount);  // (last: learn_current_device)
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    // A build without code for this device fails every launch; asked here, once, the engine can
    // say so and which build setting fixes it (engine/runtime/cuda_code.h).
    cudaFuncAttributes attr{};
    const cudaError_t fe = cudaFuncGetAttributes(&attr, code_probe);
    info->code_runs = fe == cudaSuccess;
    if (info->code_runs) {
        info->binary_version = attr.binaryVersion;
    } else {
        cudaGetLastError();  // not sticky: clear it
        info->code_error = std::string(cudaGetErrorName(fe)) + ": " + cudaGetErrorString(fe);
    }
    return true;
}

cudaStream_t stream() {
    static cudaStream_t s = [] {
        cudaStream_t t = nullptr;
        check_call(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking), "cudaStreamCreate");
        return t;
    }();
    return s;
}

void* device_malloc(std::size_t bytes) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // out of memory is an answer, not an error to keep
        return nullptr;
    }
    return check_call(e, "cudaMalloc") ? p : nullptr;
}

void device_free(void* p) {
    if (p == nullptr) return;
    // Work issued on the stream may still use the block, and CUDA does not promise that cudaFree
    // waits for it (the stream is non-blocking), so wait for the stream first. The engine caches
    // blocks (engine/core/block_cache.h) and the scratch grows rarely: few frees wait.
    check_call(cudaStreamSynchronize(stream()), "cudaStreamSynchronize (before cudaFree)");
    check_call(cudaFree(p), "cudaFree");
}

void device_zero(void* p, std::size_t bytes) {
    check_call(cudaMemsetAsync(p, 0, bytes, stream()), "cudaMemsetAsync");
}

void device_copy(void* dst, const void* src, std::size_t bytes) {
    check_call(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), "cudaMemcpyAsync");
}

// copy_from_host: kernels/cuda/upload.cu (through page-locked staging buffers).

void copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
    if (check_call(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream()),
           "cudaMemcpyAsync(device to host)")) {
        check_call(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    }
}

void synchronize() { check_call(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }

namespace {
/// Whether environment variable `name` is set to `value`.
bool env_says(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
}
std::atomic<int>& tile_setting() {
    static std::atomic<int> c{
        static_cast<int>(env_says("DT_CUDA_TILE", "large")   ? TileChoice::kLarge
                         : env_says("DT_CUDA_TILE", "small") ? TileChoice::kSmall
                         : env_says("DT_CUDA_TILE", "tiny")  ? TileChoice::kTiny
                                                             : TileChoice::kAuto)};
    return c;
}
std::atomic<int>& exact_wgrad_setting() {
    static std::atomic<int> c{static_cast<int>(env_says("DT_CUDA_EXACT_WGRAD", "limbs")
                                                   ? ExactWgradWay::kLimbAtomics
                                                   : ExactWgradWay::kLeaves)};
    return c;
}
std::atomic<int>& channel_leaves_setting() {
    static std::atomic<int> c{static_cast<int>(env_says("DT_CUDA_CHANNEL_LEAVES", "rows")
                                                   ? ChannelLeavesWay::kRows
                                                   : ChannelLeavesWay::kStaged)};
    return c;
}
}  // namespace

TileChoice tile_choice() { return static_cast<TileChoice>(tile_setting().load()); }
void set_tile_choice(TileChoice choice) { tile_setting().store(static_cast<int>(choice)); }
ExactWgradWay exact_wgrad_way() {
    return static_cast<ExactWgradWay>(exact_wgrad_setting().load());
}
void set_exact_wgrad_way(ExactWgradWay way) { exact_wgrad_setting().store(static_cast<int>(way)); }
ChannelLeavesWay channel_leaves_way() {
    return static_cast<ChannelLeavesWay>(channel_leaves_setting().load());
}
void set_channel_leaves_way(ChannelLeavesWay way) {
    channel_leaves_setting().store(static_cast<int>(way));
}

bool poison_setting() {
    static const bool on = env_says("DT_CUDA_POISON", "1");
    return on;
}

void poison_undefined(void* p, std::size_t bytes) {
    if (poison_setting() && p != nullptr && bytes > 0)
        check_call(cudaMemsetAsync(p, 0xff, bytes, stream()), "cudaMemsetAsync(poison)");
}

void* scratch(std::size_t bytes, int slot) {
    static void* blocks[2] = {nullptr, nullptr};
    static std::size_t sizes[2] = {0, 0};
    if (slot < 0 || slot > 1) {
        note_error("scratch (slot)", static_cast<int>(cudaErrorInvalidValue));
        return nullptr;
    }
    void*& block = blocks[slot];
    std::size_t& size = sizes[slot];
    if (bytes > size) {
        // Work still queued may use the old block: device_free waits for the stream first.
        if (block != nullptr) device_free(block);
        size = 0;
        block = device_malloc(bytes < 4096 ? 4096 : bytes);
        if (block == nullptr) {
            note_error("scratch (cudaMalloc)", static_cast<int>(cudaErrorMemoryAllocation));
            return nullptr;
        }
        size = bytes < 4096 ? 4096 : bytes;
    }
    poison_undefined(block, bytes);
    return block;
}

}  // namespace dt::kernels::cuda
