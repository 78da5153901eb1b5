// SPDX-License-Identifier: MIT
// The device registry of engine/core/backend.h: the CPU's memory (the host pool) and kernel
// table; no other device has a backend in this build yet.
#include "engine/core/backend.h"

#include <array>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/host_pool.h"

namespace dt {

namespace {

void host_zero(void* p, std::size_t n) { std::memset(p, 0, n); }
void host_copy(void* dst, const void* src, std::size_t n) { std::memcpy(dst, src, n); }

constexpr DeviceMemory kHostMemory{host_pool::allocate, host_pool::release, host_zero,
                                   host_copy,           host_copy,          host_copy};

/// The table serving each device (indexed by Device); nullptr: no backend in this build.
/// A function-local static, so that it is ready for tensors created during static initialisation.
std::array<const kernels::KernelTable*, 2>& tables() {
    static std::array<const kernels::KernelTable*, 2> t = {&kernels::cpu::kernel_table(), nullptr};
    return t;
}

[[noreturn]] void no_backend(Device d) {
    throw DeviceError(str("device ", device_name(d), ": this build of detrain has no ",
                          device_name(d), " backend (no ", device_name(d),
                          " memory or kernels; the engine runs on the cpu device)"));
}

/// Stands in for an entry the table of device D leaves empty: calling it throws.
template <Device D, kernels::KernelId K, typename F>
struct MissingKernel;
template <Device D, kernels::KernelId K, typename R, typename... A>
struct MissingKernel<D, K, R (*)(A...)> {
    static R call(A...) {
        throw DeviceError(str("op ", kernels::op_name(kernels::kernel_op(K)), ": the kernel table ",
                              "of device ", device_name(D), " has no ", kernels::kernel_name(K),
                              " (hint: that backend does not implement this op yet; run it on ",
                              "the cpu device)"));
    }
};

template <Device D>
kernels::KernelTable completed(kernels::KernelTable t) {
#define DT_KERNEL(op, entry)                                                                  \
    if (t.entry == nullptr)                                                                   \
        t.entry = &MissingKernel<D, kernels::KernelId::entry, decltype(t.entry)>::call;
#include "kernels/op_list.inc"
    return t;
}

}  // namespace

const DeviceMemory& device_memory(Device d) {
    if (d != Device::kCpu) no_backend(d);
    return kHostMemory;
}

const kernels::KernelTable& device_kernels(Device d) {
    const kernels::KernelTable* t = tables()[static_cast<std::size_t>(d)];
    if (t == nullptr) no_backend(d);
    return *t;
}

ScopedKernelTable::ScopedKernelTable(Device d, const kernels::KernelTable& table)
    : device_(d),
      completed_(d == Device::kCpu ? completed<Device::kCpu>(table)
                                   : completed<Device::kCuda>(table)),
      previous_(tables()[static_cast<std::size_t>(d)]) {
    tables()[static_cast<std::size_t>(d)] = &completed_;
}

ScopedKernelTable::~ScopedKernelTable() { tables()[static_cast<std::size_t>(device_)] = previous_; }

}  // namespace dt
