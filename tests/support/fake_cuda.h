// SPDX-License-Identifier: MIT
// A stand-in cuda device for tests on machines without a GPU: host memory and the CPU's kernels
// pose as Device::kCuda for the guard's lifetime. Its memory is kept inaccessible (PROT_NONE)
// except while one of its kernels or copies runs, so any code that reads or writes a cuda
// tensor's data directly from the host, instead of through the kernel table or a copy to the
// cpu, crashes the test at that access. That is what a real GPU would not forgive either (its
// pointers are not host addresses), checked here on every CI run.
// One guard at a time; not for tests that run ops on several threads at once.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>

#include "engine/core/backend.h"
#include "kernels/kernel_table.h"

namespace dt::test {

namespace fake_cuda_detail {

struct State {
    std::mutex mu;
    std::map<void*, std::size_t> blocks;  // live allocations, by mapped address
    int open = 0;                         // nesting depth of Open
    std::size_t kernel_calls = 0, copies = 0;
    std::size_t to_host = 0, from_host = 0;  // of the copies: to and from the host
    std::size_t bytes = 0, peak_bytes = 0;   // allocated (as asked), and the most at once
};
inline State& state() {
    static State s;
    return s;
}

inline std::size_t mapped_size(std::size_t bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (bytes == 0 ? 1 : bytes + page - 1) / page * page;
}

inline void protect_all(int prot) {
    for (const auto& [p, n] : state().blocks) ::mprotect(p, n, prot);
}

/// The memory is readable and writable for this object's lifetime (nests).
struct Open {
    Open() {
        std::lock_guard<std::mutex> lock(state().mu);
        if (state().open++ == 0) protect_all(PROT_READ | PROT_WRITE);
    }
    ~Open() {
        std::lock_guard<std::mutex> lock(state().mu);
        if (--state().open == 0) protect_all(PROT_NONE);
    }
};

inline void* allocate(std::size_t bytes) {
    const std::size_t n = mapped_size(bytes);
    std::lock_guard<std::mutex> lock(state().mu);
    const int prot = state().open > 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
    void* p = ::mmap(nullptr, n, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    state().blocks[p] = n;
    state().bytes += bytes;
    if (state().bytes > state().peak_bytes) state().peak_bytes = state().bytes;
    return p;
}
inline void release(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(state().mu);
    auto it = state().blocks.find(p);
    if (it == state().blocks.end()) return;
    state().bytes -= bytes;
    ::munmap(p, it->second);
    state().blocks.erase(it);
}
inline void zero(void* p, std::size_t n) {
    Open o;
    std::memset(p, 0, n);
}
inline void copy(void* d, const void* s, std::size_t n) {
    Open o;
    ++state().copies;
    std::memmove(d, s, n);
}

inline void to_host(void* d, const void* s, std::size_t n) {
    copy(d, s, n);
    ++state().to_host;
}
inline void from_host(void* d, const void* s, std::size_t n) {
    copy(d, s, n);
    ++state().from_host;
}

inline std::size_t peak_bytes() {
    std::lock_guard<std::mutex> lock(state().mu);
    return state().peak_bytes;
}

inline constexpr DeviceMemory kMemory{allocate, release,   zero,      copy,
                                      to_host,  from_host, peak_bytes};

/// Calls the CPU kernel Fn with the fake device's memory open.
template <auto Fn, typename F>
struct OpenCall;
template <auto Fn, typename R, typename... A>
struct OpenCall<Fn, R (*)(A...)> {
    static R call(A... a) {
        Open o;
        ++state().kernel_calls;
        return Fn(a...);
    }
};

inline const kernels::KernelTable& table() {
    static const kernels::KernelTable t = [] {
        kernels::KernelTable k;
        k.device = "fake-cuda";
#define DT_KERNEL(op, entry) \
    k.entry = &OpenCall<&kernels::cpu::entry, decltype(&kernels::cpu::entry)>::call;
#include "kernels/op_list.inc"
        return k;
    }();
    return t;
}

}  // namespace fake_cuda_detail

class ScopedFakeCuda {
 public:
    ScopedFakeCuda()
        : memory_(Device::kCuda, fake_cuda_detail::kMemory),
          table_(Device::kCuda, fake_cuda_detail::table()) {
        fake_cuda_detail::state().kernel_calls = 0;
        fake_cuda_detail::state().copies = 0;
        fake_cuda_detail::state().to_host = 0;
        fake_cuda_detail::state().from_host = 0;
        fake_cuda_detail::state().peak_bytes = fake_cuda_detail::state().bytes;
    }
    /// Kernels run and copies made on the fake device so far.
    static std::size_t kernel_calls() { return fake_cuda_detail::state().kernel_calls; }
    static std::size_t copies() { return fake_cuda_detail::state().copies; }
    /// Of the copies, those to the host: each is a wait for the device on a real GPU (uploads
    /// are not: kernels/cuda/upload.cu).
    static std::size_t copies_to_host() { return fake_cuda_detail::state().to_host; }
    static std::size_t copies_from_host() { return fake_cuda_detail::state().from_host; }
    static std::size_t live_blocks() { return fake_cuda_detail::state().blocks.size(); }

 private:
    ScopedDeviceMemory memory_;
    ScopedKernelTable table_;
};

}  // namespace dt::test
