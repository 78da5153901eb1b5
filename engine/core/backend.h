// SPDX-License-Identifier: MIT
// Devices as the engine sees them: where a device's memory comes from (DeviceMemory) and which
// kernels run there (its kernels::KernelTable, kernels/kernel_table.h). Storage allocates through
// device_memory(d); engine ops, optimizers and the tape call device_kernels(d) of their tensors'
// device and never name a kernel namespace, so a new backend is one memory interface and one
// filled table. The CPU is always present (the host pool and kernels::cpu::kernel_table()).
// Errors: a device without a backend in this build throws DeviceError saying so; an entry a
// device's table leaves empty throws DeviceError naming the entry, its op and the device when an
// op calls it (a backend may be filled op by op).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/core/dtype.h"
#include "kernels/kernel_table.h"

namespace dt {

/// The most bytes one DeviceMemory::to_host_later copies.
inline constexpr std::size_t kReadLaterMaxBytes = 256;

/// A device's memory. Sizes in bytes; pointers are the device's own.
struct DeviceMemory {
    void* (*allocate)(std::size_t bytes) = nullptr;  // 64-byte aligned; nullptr when out of memory
    void (*release)(void* p, std::size_t bytes) = nullptr;  // a block of allocate(bytes)
    void (*zero)(void* p, std::size_t bytes) = nullptr;     // all bits 0
    void (*copy)(void* dst, const void* src, std::size_t bytes) = nullptr;  // within the device
    void (*to_host)(void* host_dst, const void* src, std::size_t bytes) = nullptr;
    void (*from_host)(void* dst, const void* host_src, std::size_t bytes) = nullptr;
    /// A copy to the host that does not wait (at most kReadLaterMaxBytes): to_host_later queues
    /// it and returns a ticket; take_later waits for that copy alone (nothing when a wait issued
    /// after it, a to_host, has returned) and writes the bytes to host_dst. nullptr where every
    /// copy is immediate (the cpu): PendingItem then copies with to_host.
    uint64_t (*to_host_later)(const void* src, std::size_t bytes) = nullptr;
    void (*take_later)(uint64_t ticket, void* host_dst, std::size_t bytes) = nullptr;
    /// The most memory this device held for the process at once, in bytes (the allocator's
    /// blocks, cached ones included); nullptr where not tracked (the cpu: see peak RSS).
    std::size_t (*peak_bytes)() = nullptr;
};

/// The memory of device d; throws DeviceError when this build has no backend for d.
const DeviceMemory& device_memory(Device d);

/// The kernel table serving device d (every entry callable: empty ones throw DeviceError);
/// throws DeviceError when this build has no backend for d.
const kernels::KernelTable& device_kernels(Device d);

/// Throws DeviceError saying what is missing (the build, the driver, the device) and what to do
/// instead, unless device d can run kernels now: the cpu always; cuda with a CUDA build and a
/// device, or while a test's stand-in table serves it (ScopedKernelTable).
void require_device(Device d);

/// For tests: `table` serves device d for the guard's lifetime (its empty entries are completed
/// with ones that throw). Not thread-safe against ops running on other threads. Nests.
class ScopedKernelTable {
 public:
    ScopedKernelTable(Device d, const kernels::KernelTable& table);
    ~ScopedKernelTable();
    ScopedKernelTable(const ScopedKernelTable&) = delete;
    ScopedKernelTable& operator=(const ScopedKernelTable&) = delete;

 private:
    Device device_;
    kernels::KernelTable completed_;
    const kernels::KernelTable* previous_;
};

/// For tests: `memory` serves device d for the guard's lifetime (with ScopedKernelTable, a
/// stand-in device: e.g. host memory and the CPU's kernels posing as cuda, to test that data
/// reaches the device and comes back where it should). Not thread-safe. Nests.
class ScopedDeviceMemory {
 public:
    ScopedDeviceMemory(Device d, const DeviceMemory& memory);
    ~ScopedDeviceMemory();
    ScopedDeviceMemory(const ScopedDeviceMemory&) = delete;
    ScopedDeviceMemory& operator=(const ScopedDeviceMemory&) = delete;

 private:
    Device device_;
    const DeviceMemory* previous_;
};

}  // namespace dt
