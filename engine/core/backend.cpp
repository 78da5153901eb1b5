// SPDX-License-Identifier: MIT
// The device registry of engine/core/backend.h: the CPU's memory (the host pool) and kernel
// table, and in a CUDA build the cuda device's (engine/runtime/cuda_device.h,
// kernels::cuda::kernel_table()), served once a device is found.
#include "engine/core/backend.h"

#include <array>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/host_pool.h"
#include "engine/runtime/cuda_device.h"

namespace dt {

namespace {

void host_zero(void* p, std::size_t n) { std::memset(p, 0, n); }
void host_copy(void* dst, const void* src, std::size_t n) { std::memcpy(dst, src, n); }

constexpr DeviceMemory kHostMemory{host_pool::allocate, host_pool::release, host_zero,
                                   host_copy,           host_copy,          host_copy};

/// The cuda table completed with throwing entries for what it leaves empty (a backend is
/// filled op by op); nullptr in a build without CUDA.
const kernels::KernelTable* cuda_table();

/// The table serving each device (indexed by Device); nullptr: no backend in this build.
/// A function-local static, so that it is ready for tensors created during static initialisation.
std::array<const kernels::KernelTable*, 2>& tables() {
    static std::array<const kernels::KernelTable*, 2> t = {&kernels::cpu::kernel_table(),
                                                           cuda_table()};
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

const kernels::KernelTable* cuda_table() {
#if DT_WITH_CUDA
    static const kernels::KernelTable t = completed<Device::kCuda>(kernels::cuda::kernel_table());
    return &t;
#else
    return nullptr;
#endif
}

/// Memory of a device other than the CPU: a test's (ScopedDeviceMemory) or the cuda device's.
const DeviceMemory*& memory_override(Device d) {
    static std::array<const DeviceMemory*, 2> m = {nullptr, nullptr};
    return m[static_cast<std::size_t>(d)];
}

}  // namespace

const DeviceMemory& device_memory(Device d) {
    if (const DeviceMemory* m = memory_override(d)) return *m;
    if (d == Device::kCpu) return kHostMemory;
    if (!cuda_device::built()) no_backend(d);
    return cuda_device::memory();  // throws when there is no device
}

const kernels::KernelTable& device_kernels(Device d) {
    const kernels::KernelTable* t = tables()[static_cast<std::size_t>(d)];
    if (t == nullptr) no_backend(d);
    require_device(d);
    return *t;
}

void require_device(Device d) {
    if (d == Device::kCpu) return;
    const kernels::KernelTable* t = tables()[static_cast<std::size_t>(d)];
    if (t == nullptr || t == cuda_table()) cuda_device::require();  // not a test's stand-in
}

ScopedDeviceMemory::ScopedDeviceMemory(Device d, const DeviceMemory& memory)
    : device_(d), previous_(memory_override(d)) {
    memory_override(d) = &memory;
}

ScopedDeviceMemory::~ScopedDeviceMemory() { memory_override(device_) = previous_; }

ScopedKernelTable::ScopedKernelTable(Device d, const kernels::KernelTable& table)
    : device_(d),
      completed_(d == Device::kCpu ? completed<Device::kCpu>(table)
                                   : completed<Device::kCuda>(table)),
      previous_(tables()[static_cast<std::size_t>(d)]) {
    tables()[static_cast<std::size_t>(d)] = &completed_;
}

ScopedKernelTable::~ScopedKernelTable() { tables()[static_cast<std::size_t>(device_)] = previous_; }

}  // namespace dt
