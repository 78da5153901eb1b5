// SPDX-License-Identifier: MIT
// The cuda device as the engine sees it: whether this build and this machine have one, what it
// is, and its memory (a BlockCache over cudaMalloc: blocks are kept per size and reused, since
// a free waits for the device: kernels/cuda/runtime.cu). engine/core/backend.cpp serves Device::kCuda from here.
// In a build without CUDA everything reports "not built with CUDA" and memory() throws.
#pragma once
#include <cstddef>
#include <string>

#include "engine/core/backend.h"
#include "engine/core/block_cache.h"

namespace dt::cuda_device {

/// Whether this binary was compiled with the CUDA backend.
bool built();

/// Whether kernels can run on a CUDA device now; when not, `why` says what is missing (the
/// build, the driver, the device). Probed once.
bool available(std::string* why = nullptr);

/// One line for `detrain info`: the device (name, compute capability, memory, SMs, driver and
/// runtime) and how this build's kernels run on it (machine code, or PTX the driver compiles at
/// their first launch: engine/runtime/cuda_code.h), or why there is none ("unusable: ..." for a
/// device this build has no code for).
std::string describe();

/// The CUDA architectures this build's kernels were compiled for (CMake's list with ',' for ';',
/// "emulated" for a hostcuda build); empty without CUDA.
std::string build_architectures();

/// The CUDA kernels' run-time ways in force (kernels/cuda/runtime.h; each gives the same bits,
/// each is set by an environment variable read once): the GEMM-shaped block programs' tile
/// (`auto`|`small`|`large`|`tiny`, $DT_CUDA_TILE), conv.wgrad's exact way (`leaves`|`limbs`,
/// $DT_CUDA_EXACT_WGRAD) and the per-channel totals' way (`staged`|`rows`: block programs for
/// the leaves and the combine, or a thread per row and per channel; $DT_CUDA_CHANNEL_LEAVES). All
/// empty in a build without CUDA. `poison`: whether memory handed out undefined is filled with
/// all-ones bytes first ($DT_CUDA_POISON=1, a debugging aid; kernels/cuda/runtime.h).
struct KernelWays {
    std::string tile, exact_wgrad, channel_leaves;
    bool poison = false;
};
KernelWays kernel_ways();

/// Throws DeviceError saying what is missing (the build, the driver, the device) and what to do
/// instead when !available().
void require();

/// The device's memory; throws as require() does.
const DeviceMemory& memory();

/// Throws DeviceError when the device reported an error since the last check (engine
/// synchronisation points call it: copies to the host, the end of a step).
void check();

/// Waits for every kernel and copy issued so far, then check()s (for timing; no-op without CUDA).
void synchronize();

BlockCache::Stats memory_stats();
void trim();

}  // namespace dt::cuda_device
