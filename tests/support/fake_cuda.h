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
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

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
    // Copies to the host made later (to_host_later): their bytes, by ticket, and whether a wait
    // issued after them (a to_host) has returned, so that taking them would not wait on a GPU.
    struct LaterRead {
        std::vector<unsigned char> bytes;
        bool covered = false;
    };
    std::map<uint64_t, LaterRead> later;
    uint64_t next_ticket = 1;
    std::size_t reads_later = 0;
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
    std::lock_guard<std::mutex> lock(state().mu);
    ++state().to_host;
    for (auto& [ticket, read] : state().later) read.covered = true;  // a wait covers them all
}
inline uint64_t to_host_later(const void* s, std::size_t n) {
    State::LaterRead read;
    read.bytes.resize(n);
    copy(read.bytes.data(), s, n);
    std::lock_guard<std::mutex> lock(state().mu);
    ++state().reads_later;
    const uint64_t ticket = state().next_ticket++;
    state().later[ticket] = std::move(read);
    return ticket;
}
/// Counts as a copy to the host (a wait) unless a to_host since the read covered it.
inline void take_later(uint64_t ticket, void* d, std::size_t n) {
    std::lock_guard<std::mutex> lock(state().mu);
    auto it = state().later.find(ticket);
    if (it == state().later.end() || it->second.bytes.size() != n) std::abort();
    if (!it->second.covered) ++state().to_host;
    std::memcpy(d, it->second.bytes.data(), n);
    state().later.erase(it);
}
inline void from_host(void* d, const void* s, std::size_t n) {
    copy(d, s, n);
    ++state().from_host;
}

inline std::size_t peak_bytes() {
    std::lock_guard<std::mutex> lock(state().mu);
    return state().peak_bytes;
}

inline constexpr DeviceMemory kMemory{allocate,  release,       zero,       copy,      to_host,
                                      from_host, to_host_later, take_later, peak_bytes};

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
        fake_cuda_detail::state().reads_later = 0;
        fake_cuda_detail::state().later.clear();
        fake_cuda_detail::state().peak_bytes = fake_cuda_detail::state().bytes;
    }
    /// Kernels run and copies made on the fake device so far.
    static std::size_t kernel_calls() { return fake_cuda_detail::state().kernel_calls; }
    static std::size_t copies() { return fake_cuda_detail::state().copies; }
    /// Of the copies, those to the host: each is a wait for the device on a real GPU (uploads
    /// are not: kernels/cuda/upload.cu).
    static std::size_t copies_to_host() { return fake_cuda_detail::state().to_host; }
    static std::size_t copies_from_host() { return fake_cuda_detail::state().from_host; }
    /// Copies to the host made later (DeviceMemory::to_host_later); a take that no wait covered
    /// counts in copies_to_host.
    static std::size_t reads_later() { return fake_cuda_detail::state().reads_later; }
    static std::size_t live_blocks() { return fake_cuda_detail::state().blocks.size(); }

 private:
    ScopedDeviceMemory memory_;
    ScopedKernelTable table_;
};

}  // namespace dt::test
