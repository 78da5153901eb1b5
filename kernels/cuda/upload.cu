// SPDX-License-Identifier: MIT
// copy_from_host (kernels/cuda/runtime.h): uploads that do not wait for the device.
//
// cudaMemcpyAsync from pageable host memory may synchronise with the stream before it returns
// (the CUDA runtime's "API synchronization behavior": the driver stages pageable memory itself);
// from page-locked memory it is asynchronous. A training step uploads its images and labels and
// the backward's seed gradient while the previous work still runs; each of those used to be a
// wait for the device. So the host data is first copied into one of a few page-locked staging
// buffers and the upload issued from there, on the engine's stream; an event recorded after it
// says when that buffer may be written again. A buffer comes round again kSlots uploads later,
// when its copy is normally long done (otherwise the upload waits for that copy alone).
// Uploads above kMaxStaged bytes (none in training), and every upload once page-locked memory
// was refused, copy directly and wait, as before.
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"

namespace dt::kernels::cuda {

namespace {

constexpr int kSlots = 4;
constexpr std::size_t kMinStaging = std::size_t{64} << 10;
constexpr std::size_t kMaxStaged = std::size_t{64} << 20;

struct StagingSlot {
    void* host = nullptr;  // page-locked (cudaMallocHost)
    std::size_t size = 0;
    cudaEvent_t copied = nullptr;  // recorded after the last upload from `host`
    bool pending = false;          // an upload from `host` was issued and not yet waited for
};

struct Staging {
    std::mutex mu;
    StagingSlot slots[kSlots];
    int next = 0;
    bool no_pinned = false;  // cudaMallocHost failed once: every upload copies directly
};

Staging& staging() {
    static Staging* s = new Staging;  // never destroyed: no CUDA calls at process exit
    return *s;
}

/// The slot's buffer, free to write and at least `bytes` long; nullptr when it cannot be had (a
/// CUDA error is recorded; no page-locked memory is not an error: the caller copies directly).
void* ready_buffer(Staging& st, StagingSlot& s, std::size_t bytes) {
    if (st.no_pinned) return nullptr;
    if (s.copied == nullptr &&
        !check_call(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming), "cudaEventCreate")) {
        return nullptr;
    }
    if (s.pending) {  // the upload issued kSlots uploads ago, normally done already
        if (!check_call(cudaEventSynchronize(s.copied), "cudaEventSynchronize (staging)"))
            return nullptr;
        s.pending = false;
    }
    if (s.size < bytes) {
        if (s.host != nullptr) check_call(cudaFreeHost(s.host), "cudaFreeHost (staging)");
        s.host = nullptr;
        s.size = 0;
        std::size_t size = kMinStaging;
        while (size < bytes) size *= 2;
        if (cudaMallocHost(&s.host, size) != cudaSuccess) {
            cudaGetLastError();  // not sticky, and not fatal: uploads go the direct way
            s.host = nullptr;
            st.no_pinned = true;
            return nullptr;
        }
        s.size = size;
    }
    return s.host;
}

void copy_and_wait(void* dst, const void* host_src, std::size_t bytes) {
    if (check_call(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream()),
              "cudaMemcpyAsync(host to device)")) {
        check_call(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    }
}

}  // namespace

void copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
    if (bytes == 0) return;
    if (bytes > kMaxStaged) {
        copy_and_wait(dst, host_src, bytes);
        return;
    }
    Staging& st = staging();
    std::lock_guard<std::mutex> lock(st.mu);
    StagingSlot& s = st.slots[st.next];
    st.next = (st.next + 1) % kSlots;
    void* buffer = ready_buffer(st, s, bytes);
    if (buffer == nullptr) {
        copy_and_wait(dst, host_src, bytes);
        return;
    }
    std::memcpy(buffer, host_src, bytes);
    if (check_call(cudaMemcpyAsync(dst, buffer, bytes, cudaMemcpyHostToDevice, stream()),
              "cudaMemcpyAsync(host to device, staged)") &&
        check_call(cudaEventRecord(s.copied, stream()), "cudaEventRecord (staging)")) {
        s.pending = true;
        return;
    }
    // The upload was not issued as planned: wait, so that no later upload overwrites a buffer a
    // copy may still read.
    check_call(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

}  // namespace dt::kernels::cuda
