// SPDX-License-Identifier: MIT
// hostcuda's CUDA runtime API: the functions of <cuda_runtime.h> the backend and its tests call,
// over the emulated device of queue.h (tests/hostcuda/cuda_runtime.h says what it emulates).
#include <sanitizer/asan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "tests/hostcuda/queue.h"

using dt::hostcuda::fail;
using dt::hostcuda::State;
using dt::hostcuda::state;
using Lock = std::lock_guard<std::recursive_mutex>;

cudaError_t cudaGetDeviceCount(int* count) {
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}

// An H100 SXM's answers, as cudaGetDeviceProperties gives.
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    if (device != 0) return fail(cudaErrorInvalidValue);
    switch (attr) {
        case cudaDevAttrClockRate:
            *value = 1980000;  // kHz
            return cudaSuccess;
        case cudaDevAttrMultiProcessorCount:
            *value = dt::hostcuda::kMultiprocessors;
            return cudaSuccess;
        case cudaDevAttrComputeCapabilityMajor:
            *value = 9;
            return cudaSuccess;
        case cudaDevAttrComputeCapabilityMinor:
            *value = 0;
            return cudaSuccess;
    }
    return fail(cudaErrorInvalidValue);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (device != 0) return fail(cudaErrorInvalidValue);
    *prop = cudaDeviceProp{};
    std::snprintf(prop->name, sizeof prop->name, "hostcuda (CUDA emulated on the host)");
    prop->totalGlobalMem = dt::hostcuda::memory_limit();
    prop->sharedMemPerBlock = dt::hostcuda::kSharedPerBlock;
    prop->sharedMemPerBlockOptin = dt::hostcuda::kSharedOptin;
    prop->sharedMemPerMultiprocessor = std::size_t{228} << 10;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->multiProcessorCount = dt::hostcuda::kMultiprocessors;
    prop->major = 9;
    prop->minor = 0;
    prop->l2CacheSize = 50 << 20;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    return device == 0 ? cudaSuccess : fail(cudaErrorInvalidValue);
}
cudaError_t cudaDriverGetVersion(int* v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetLastError() { return dt::hostcuda::take_last_error(); }
cudaError_t cudaPeekAtLastError() { return dt::hostcuda::peek_last_error(); }

namespace {
struct ErrorText {
    cudaError_t e;
    const char* name;
    const char* text;  // the runtime's words
};
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "hostcuda: cudaFree with work still queued (CUDA does not promise to wait for it)"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources",
     "too many resources requested for launch"},
};
const ErrorText* error_text(cudaError_t e) {
    for (const ErrorText& t : kErrors)
        if (t.e == e) return &t;
    return nullptr;
}
}  // namespace

const char* cudaGetErrorName(cudaError_t e) {
    const ErrorText* t = error_text(e);
    return t != nullptr ? t->name : "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
    const ErrorText* t = error_text(e);
    return t != nullptr ? t->text : "unknown error";
}

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
    State& s = state();
    Lock lock(s.mu);
    *p = nullptr;
    if (bytes > dt::hostcuda::memory_limit() - s.device_bytes)
        return fail(cudaErrorMemoryAllocation);
    // 256-byte aligned, as cudaMalloc's are; plain heap memory, so that a sanitizer sees a kernel
    // reading or writing past an allocation.
    void* q = ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256}, std::nothrow);
    if (q == nullptr) return fail(cudaErrorMemoryAllocation);
    // All-ones bytes (NaN floats), as shared memory: a GPU's fresh memory is undefined, and a
    // kernel that counts on zeros from the heap's fresh pages must not pass here.
    std::memset(q, 0xff, bytes);
    s.device[static_cast<const char*>(q)] = bytes;
    s.device_bytes += bytes;
    ASAN_POISON_MEMORY_REGION(q, bytes);  // (dt::hostcuda::device_access)
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
    if (p == nullptr) return cudaSuccess;
    State& s = state();
    Lock lock(s.mu);
    // Work still queued may use the block, and CUDA does not promise that cudaFree waits for
    // it (a non-blocking stream's in particular): a program must wait first.
    if (!s.queue.empty()) return fail(cudaErrorIllegalState);
    auto it = s.device.find(static_cast<const char*>(p));
    if (it == s.device.end()) return fail(cudaErrorInvalidValue);
    s.device_bytes -= it->second;
    ASAN_UNPOISON_MEMORY_REGION(p, it->second);
    s.device.erase(it);
    ::operator delete (p, std::align_val_t{256});
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, std::size_t bytes) {
    State& s = state();
    Lock lock(s.mu);
    *p = std::malloc(bytes == 0 ? 1 : bytes);
    if (*p == nullptr) return fail(cudaErrorMemoryAllocation);
    s.pinned[static_cast<const char*>(*p)] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
    if (p == nullptr) return cudaSuccess;
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::drain(s);
    if (s.pinned.erase(static_cast<const char*>(p)) == 0) return fail(cudaErrorInvalidValue);
    std::free(p);
    return cudaSuccess;
}

namespace {
/// A host-to-device copy from pageable memory: the runtime stages its bytes when it is issued.
bool pageable_upload(const State& s, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    return kind == cudaMemcpyHostToDevice && !dt::hostcuda::inside(s.pinned, src, bytes);
}
}  // namespace

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t st) {
    if (bytes == 0) return cudaSuccess;
    State& s = state();
    Lock lock(s.mu);
    if (!dt::hostcuda::copy_ok(s, dst, src, bytes, kind)) {
        std::fprintf(stderr,
                     "hostcuda: a copy of %zu bytes (kind %d) from %p to %p: a device side "
                     "outside every allocation, or a host side in device memory\n",
                     bytes, static_cast<int>(kind), src, dst);
        return fail(cudaErrorInvalidValue);
    }
    // A copy between the device and page-locked memory is queued: the host must wait for it
    // before it reads or reuses the buffer. With pageable memory the runtime stages the bytes:
    // a download is done now, after the work queued before it that its stream is ordered with;
    // an upload's bytes are taken now (the host may reuse its buffer) and written to the device
    // in the stream's turn, which work of another ordering group does not wait for.
    const bool pageable_download =
        kind == cudaMemcpyDeviceToHost && !dt::hostcuda::inside(s.pinned, dst, bytes);
    if (pageable_download) {
        dt::hostcuda::drain_group(s, dt::hostcuda::group_of(st));
        dt::hostcuda::device_access(s, true);
        std::memmove(dst, src, bytes);
        dt::hostcuda::device_access(s, false);
        return cudaSuccess;
    }
    dt::hostcuda::Op op(dt::hostcuda::Op::kCopy);
    op.group = dt::hostcuda::group_of(st);
    op.dst = dst;
    op.src = src;
    op.bytes = bytes;
    if (pageable_upload(s, src, bytes, kind)) {
        const auto* from = static_cast<const unsigned char*>(src);
        op.staged.assign(from, from + bytes);
        op.src = op.staged.data();  // (a vector's heap buffer stays where it is when moved)
    }
    dt::hostcuda::push(s, std::move(op));
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    State& s = state();
    Lock lock(s.mu);
    // On the legacy default stream, so ordered with the legacy and blocking streams' work only.
    // It returns when the host side is done: a download or a copy with page-locked memory has
    // run; a pageable upload's bytes are staged and a device-to-device copy only queued (the
    // runtime's synchronous behaviour).
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
    const bool queued_only =
        kind == cudaMemcpyDeviceToDevice || pageable_upload(s, src, bytes, kind);
    if (!queued_only) dt::hostcuda::drain_group(s, dt::hostcuda::group_of(nullptr));
    return e;
}

cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t st) {
    if (bytes == 0) return cudaSuccess;
    State& s = state();
    Lock lock(s.mu);
    if (!dt::hostcuda::inside(s.device, p, bytes)) return fail(cudaErrorInvalidValue);
    dt::hostcuda::Op op(dt::hostcuda::Op::kSet);
    op.group = dt::hostcuda::group_of(st);
    op.dst = p;
    op.bytes = bytes;
    op.value = value;
    dt::hostcuda::push(s, std::move(op));
    return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
    // On the legacy default stream; asynchronous with the host for device memory, as the
    // runtime's is: only queued.
    return cudaMemsetAsync(p, value, bytes, nullptr);
}

cudaError_t cudaDeviceSynchronize() {
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::drain(s);
    return cudaSuccess;
}

namespace {
/// A new stream or event, kept by the emulated driver (State::handles) until destroyed.
template <class T>
cudaError_t new_handle(T** out, T value) {
    State& s = state();
    Lock lock(s.mu);
    *out = new T(value);
    s.handles.insert(*out);
    return cudaSuccess;
}
template <class T>
cudaError_t destroy_handle(T* h) {
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::drain(s);  // (a queued record of an event must not outlive it)
    if (s.handles.erase(h) == 0) return fail(cudaErrorInvalidResourceHandle);
    delete h;
    return cudaSuccess;
}
}  // namespace

cudaError_t cudaStreamCreate(cudaStream_t* st) { return cudaStreamCreateWithFlags(st, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* st, unsigned flags) {
    return new_handle(st, CUstream_st{flags});
}
cudaError_t cudaStreamDestroy(cudaStream_t st) { return destroy_handle(st); }
// A stream's wait runs the work of its ordering group only (queue.h, group_of).
cudaError_t cudaStreamSynchronize(cudaStream_t st) {
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::drain_group(s, dt::hostcuda::group_of(st));
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t st) {
    State& s = state();
    Lock lock(s.mu);
    return dt::hostcuda::group_pending(s, dt::hostcuda::group_of(st)) ? cudaErrorNotReady
                                                                      : cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t st, cudaHostFn_t fn, void* user_data) {
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::Op op(dt::hostcuda::Op::kHost);
    op.group = dt::hostcuda::group_of(st);
    op.run = [fn, user_data] { fn(user_data); };
    dt::hostcuda::push(s, std::move(op));
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
    return new_handle(e, CUevent_st{});
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { return destroy_handle(e); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
    if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::Op op(dt::hostcuda::Op::kEvent);
    op.event = e;
    op.group = dt::hostcuda::group_of(st);
    e->group = op.group;
    e->done = false;
    e->recorded = dt::hostcuda::push(s, std::move(op));
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
    State& s = state();
    Lock lock(s.mu);
    dt::hostcuda::drain_group(s, e->group, e->recorded);
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
    State& s = state();
    Lock lock(s.mu);
    return e->recorded == 0 || e->done ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    if (!start->done || !end->done) return fail(cudaErrorNotReady);
    *ms = static_cast<float>(end->ms - start->ms);
    return cudaSuccess;
}
