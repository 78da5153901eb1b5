// SPDX-License-Identifier: MIT
// hostcuda: the CUDA runtime and kernel language, emulated on the host, so that the CUDA backend's
// own code (the launchers of kernels/cuda/*.cu, the kernels around their bodies, the engine's
// device memory, copies, events) runs end to end on a machine without a GPU
// (scripts/emulate.sh, CI). It stands in for <cuda_runtime.h> in that build only and is
// force-included into every .cu file, as nvcc does with the real one; tests/hostcuda/rewrite_cu.py
// turns the two pieces of CUDA syntax C++ lacks into calls of this header (kernel<<<...>>>(args)
// and shared memory declarations).
//
// What it is faithful to: a launch's grid and block (every thread of every block runs; a block's
// threads are fibers and __syncthreads a real barrier among them; blocks in order and threads
// forward on even phases, backward on odd ones, or the other way round, or every launch and phase
// in a random order: DT_HOSTCUDA_ORDER, queue.cpp), launch errors a GPU gives (block or grid size
// out of range, dynamic shared memory past 48 KiB without cudaFuncSetAttribute, or past the
// device's opt-in), streams whose work is deferred until something waits for it (a
// synchronisation, an event, a copy to pageable memory), so that host code reading a result it did
// not wait for, or reusing a page-locked buffer a queued copy still reads, gets what a GPU could
// give it; a wait runs only the work a GPU orders it after (a non-blocking stream's is not the
// legacy default stream's: queue.h, group_of), so that work mixed across such streams without a
// wait between them reads what a GPU could leave it. Shared memory starts as all-ones bytes (NaN
// floats), as a GPU's starts undefined. cudaFree with work still queued is an error
// (cudaErrorIllegalState): CUDA does not promise to wait for work that may use the block.
// What it is not: a GPU's memory model, warp semantics, concurrency (blocks run one at a time, so
// float atomics add in the block order: fixed unless shuffled), device intrinsics (the kernels'
// __CUDA_ARCH__ branches are not compiled here, their host branches are), speed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define DT_HOSTCUDA 1
#define CUDART_VERSION 13000

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum { cudaSharedmemCarveoutDefault = -1, cudaSharedmemCarveoutMaxShared = 100 };
enum cudaDeviceAttr {
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
};
enum { cudaStreamDefault = 0, cudaStreamNonBlocking = 1 };
enum { cudaEventDefault = 0, cudaEventBlockingSync = 1, cudaEventDisableTiming = 2 };

struct CUstream_st;
struct CUevent_st;
typedef CUstream_st* cudaStream_t;
typedef CUevent_st* cudaEvent_t;
typedef void (*cudaHostFn_t)(void* user_data);

struct cudaDeviceProp {
    char name[256];
    std::size_t totalGlobalMem;
    std::size_t sharedMemPerBlock;
    std::size_t sharedMemPerBlockOptin;
    std::size_t sharedMemPerMultiprocessor;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsPerMultiProcessor;
    int multiProcessorCount;
    int major;
    int minor;
    int l2CacheSize;
};

// The builtin variables of the thread the emulator runs (one thread at a time).
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

void __syncthreads();
long long clock64();  // a counter that moves a million "cycles" a read: spin loops end quickly

// Atomics: the emulator runs one device thread at a time, so plain read-modify-writes are atomic.
template <class T>
inline T atomicAdd(T* p, T v) {
    const T old = *p;
    *p = old + v;
    return old;
}

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDriverGetVersion(int* v);
cudaError_t cudaRuntimeGetVersion(int* v);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);

cudaError_t cudaMalloc(void** p, std::size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocHost(void** p, std::size_t bytes);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s = nullptr);
cudaError_t cudaMemset(void* p, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t s = nullptr);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user_data);

cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

namespace dt::hostcuda {

/// The host's steady clock in nanoseconds (a GPU's %globaltimer).
uint64_t global_timer_ns();

/// Eager (off unless set): work runs when it is issued, as on a GPU far ahead of a slow host
/// (a loaded or virtualised one), except behind a host function (cudaLaunchHostFunc), which
/// holds its stream's later work until something waits for that stream. A test that counts on
/// the device still being busy without holding it so fails here.
void set_eager(bool on);

cudaError_t set_function_attribute(const void* kernel, cudaFuncAttribute attr, int value);

/// A launch's configuration, the `<<<grid, block, shared, stream>>>` of CUDA.
struct Launch {
    dim3 grid, block;
    std::size_t shared = 0;
    cudaStream_t stream = nullptr;  // nullptr: the legacy default stream
    template <class G, class B>
    Launch(G g, B b, std::size_t bytes = 0, cudaStream_t st = nullptr)
        : grid(to_dim3(g)), block(to_dim3(b)), shared(bytes), stream(st) {}

    template <class... A>
    auto operator()(A&&... a) const;

 private:
    template <class D>
    static dim3 to_dim3(D d) {
        if constexpr (std::is_same_v<D, dim3>) {
            return d;
        } else {
            return dim3(static_cast<unsigned>(d));
        }
    }
};

/// A launch with its arguments, waiting for its kernel (`kernel << Launch(...)(args)`).
template <class... A>
struct BoundLaunch {
    Launch config;
    std::tuple<std::decay_t<A>...> args;
};

template <class... A>
auto Launch::operator()(A&&... a) const {
    return BoundLaunch<A...>{*this, std::tuple<std::decay_t<A>...>(std::forward<A>(a)...)};
}

/// Checks the configuration (a launch error is kept for cudaGetLastError, as a GPU does) and
/// queues `run`, which runs one device thread, on the stream.
void enqueue_launch(const void* kernel, const Launch& config, std::function<void()> run);

template <class... P, class... A>
void operator<<(void (*kernel)(P...), BoundLaunch<A...>&& bound) {
    // The arguments are converted to the kernel's parameter types and copied now, as a launch
    // does; the copy lives with the queued launch.
    auto params =
        std::apply([](auto&... a) { return std::tuple<std::decay_t<P>...>(static_cast<P>(a)...); },
                   bound.args);
    enqueue_launch(reinterpret_cast<const void*>(kernel), bound.config,
                   [kernel, params] { std::apply(kernel, params); });
}

/// The running block's shared memory: a thread's k-th request gets the block's k-th array (every
/// thread of a block declares the same arrays in the same order), all-ones bytes at its start.
void* shared_array(std::size_t bytes);
/// The running launch's dynamic shared memory (`extern __shared__`).
void* dynamic_shared();

template <class T>
T* static_shared(std::size_t count) {
    return static_cast<T*>(shared_array(sizeof(T) * count));
}
template <class T>
T* dynamic_shared_as() {
    return static_cast<T*>(dynamic_shared());
}

}  // namespace dt::hostcuda

// The runtime's typed overloads.
template <class T>
cudaError_t cudaMalloc(T** p, std::size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
template <class T>
cudaError_t cudaMallocHost(T** p, std::size_t bytes) {
    return cudaMallocHost(reinterpret_cast<void**>(p), bytes);
}
template <class T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attr, int value) {
    return dt::hostcuda::set_function_attribute(reinterpret_cast<const void*>(kernel), attr, value);
}
// The emulated device (compute capability 9.0) runs every kernel: its "machine code" is sm_90.
struct cudaFuncAttributes {
    int binaryVersion, ptxVersion, maxThreadsPerBlock;
};
template <class T>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, T* kernel) {
    if (kernel == nullptr) return cudaErrorInvalidValue;
    *a = cudaFuncAttributes{90, 90, 1024};
    return cudaSuccess;
}
