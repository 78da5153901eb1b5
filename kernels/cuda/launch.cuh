// SPDX-License-Identifier: MIT
// What the CUDA launchers share: the engine's one stream, the launch-error check, the launch of
// grid-striding kernels, the permuted modes' device permutation, sliced scratch, the opt-in to
// large dynamic shared memory and the block programs' barrier.
// Included by kernels/cuda/*.cu only.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/common/accum_mode.h"
#include "kernels/common/hd.h"
#include "kernels/cuda/launch_shape.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/tile_gemm.h"

namespace dt::kernels::cuda {

/// The stream every kernel and copy of the engine runs on (created on first use).
cudaStream_t stream();

/// order[0..n) = permute_order(n, key) drawn on the device by one thread, in the runtime's
/// scratch (valid until the next scratch user); nullptr when out of memory (recorded).
const uint32_t* permutation_on_device(int64_t n, uint64_t key);

/// order[0..n) = permute_order(n, key) drawn on the device by one thread into `order`.
void permutation_into(uint32_t* order, int64_t n, uint64_t key);

/// The permutation of n items for a permuted-mode spec (permutation_on_device); nullptr for the
/// other modes.
inline const uint32_t* permuted_order(const common::AccumSpec& spec, int64_t n) {
    if (spec.mode != common::AccumMode::kPermuted) return nullptr;
    return permutation_on_device(n, spec.permute_key);
}

/// Scratch for the tiled values of a backward launcher done in slices (conv2d.cu's dgrad,
/// conv2d_wgrad.cu's wgrad): `slice` units (samples, output channels) of `unit_floats` values
/// each, as many as fit `max_bytes` (at least one), followed by the permutation of `order_n` items
/// drawn on the device when `spec` is permuted (else order is null). values is null when out of
/// memory (recorded).
struct SlicedScratch {
    float* values = nullptr;
    const uint32_t* order = nullptr;
    int64_t slice = 0;
};
inline SlicedScratch sliced_scratch(int64_t unit_floats, int64_t units, std::size_t max_bytes,
                                    const common::AccumSpec& spec, int64_t order_n) {
    SlicedScratch out;
    const int64_t cap =
        unit_floats > 0 ? static_cast<int64_t>(max_bytes / sizeof(float)) / unit_floats : units;
    out.slice = cap < 1 ? 1 : cap < units ? cap : units;
    const std::size_t bytes =
        (sizeof(float) * static_cast<std::size_t>(out.slice * unit_floats) + 255) / 256 * 256;
    char* s =
        static_cast<char*>(scratch(bytes + sizeof(uint32_t) * static_cast<std::size_t>(order_n)));
    if (s == nullptr) return out;
    out.values = reinterpret_cast<float*>(s);
    if (spec.mode == common::AccumMode::kPermuted) {
        auto* order = reinterpret_cast<uint32_t*>(s + bytes);
        permutation_into(order, order_n, spec.permute_key);
        out.order = order;
    }
    return out;
}

/// Whether `Kernel` may have `bytes` of dynamic shared memory a block: past the 48 KiB every
/// block has, a kernel is allowed more by an attribute (and the SM's carveout made mostly shared
/// memory, so that two large blocks fit), if the device has that much (the large tile's cut
/// programs: conv.dgrad's exact cut, conv.wgrad's exact fold). A grant is kept per kernel; a
/// refusal is not, so a call made before the device's facts are known (device_block_shared_optin)
/// cannot hold the small tile for the whole process.
template <auto Kernel>
bool dynamic_shared_ok(std::size_t bytes) {
    if (bytes <= std::size_t{48} << 10) return true;
    static std::atomic<std::size_t> granted{0};
    if (bytes <= granted.load(std::memory_order_relaxed)) return true;
    if (device_block_shared_optin() < bytes) return false;
    const bool set =
        cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes)) == cudaSuccess &&
        cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared) == cudaSuccess;
    cudaGetLastError();  // not sticky: a refusal leaves the small tile, not an error
    if (set) granted.store(bytes, std::memory_order_relaxed);
    return set;
}

/// __syncthreads, callable from the host-device block programs (*_tiled_bodies.h), which the
/// host tests run with a std::barrier instead (tests/support/block_runner.h).
struct DeviceSync {
    DT_HD void operator()() const {
#if defined(__CUDA_ARCH__) || defined(DT_HOSTCUDA_KERNELS)  // (hostcuda: a barrier of fibers)
        __syncthreads();
#endif
    }
};

/// f(SmallTile{}), f(LargeTile{}) or f(TinyTile{}), as tile_choice() says (kAuto: TinyTile
/// where blocks_of(SmallTile{}), the launch's block count with SmallTile, is below the device's
/// SMs, tiny_tile_for; LargeTile where blocks_of(LargeTile{}) fills a wave of them and its tiles
/// lie mostly inside C, large_tile_for; else SmallTile): the launchers of the tiled block programs
/// instantiate their kernels for every shape and launch the chosen one.
static_assert(kLargeWave == LargeTile::kMinBlocks, "a wave of large tiles: its occupancy");
template <class Blocks, class F>
void with_tile_shape(const Blocks& blocks_of, F&& f) {
    switch (tile_choice()) {
        case TileChoice::kLarge:
            f(LargeTile{});
            return;
        case TileChoice::kSmall:
            f(SmallTile{});
            return;
        case TileChoice::kTiny:
            f(TinyTile{});
            return;
        case TileChoice::kAuto:
            break;
    }
    const int sms = device_multiprocessors();
    const int64_t small_blocks = blocks_of(SmallTile{});
    if (tiny_tile_for(small_blocks, sms)) {
        f(TinyTile{});
    } else if (large_tile_for(blocks_of(LargeTile{}), small_blocks, sms)) {
        f(LargeTile{});
    } else {
        f(SmallTile{});
    }
}

/// Keeps the first error (for take_error()) when `e`, the answer of CUDA runtime call `api`, is
/// one; returns whether it was a success.
inline bool check_call(cudaError_t e, const char* api) {
    if (e == cudaSuccess) return true;
    note_error(api, static_cast<int>(e));
    return false;
}

/// Records a launch failure of `what` (a kernel's name) for take_error(), and the launch in the
/// launch profile while it is on (runtime.h).
inline void check_launch(const char* what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) note_error(what, static_cast<int>(e));
    if (launch_profile_on()) profile_launch(what);
}

#if defined(__CUDACC__) || defined(DT_HOSTCUDA_KERNELS)  // (GPU benches: host code)
/// Launches a grid-striding kernel over n elements on the stream (the launch shape of
/// launch_shape.h; nothing when n <= 0) and records a launch failure under `name`.
template <typename... KArgs, typename... Args>
void launch_elementwise(const char* name, void (*kernel)(KArgs...), int64_t n, Args... args) {
    if (n <= 0) return;
    kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, stream()>>>(args...);
    check_launch(name);
}
#endif

}  // namespace dt::kernels::cuda
