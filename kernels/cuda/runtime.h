// SPDX-License-Identifier: MIT
// The CUDA runtime as detrain uses it, behind a plain C++ header (no CUDA headers), so that the
// engine (compiled by the host compiler) can hold device memory: device discovery, raw memory,
// copies and the one stream every kernel and copy runs on, in issue order. Nothing here throws:
// failures return nullptr/false, and the first error is kept for take_error(), which the engine
// turns into a DeviceError at its synchronisation points (engine/runtime/cuda_device.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::kernels::cuda {

struct DeviceInfo {
    int ordinal = 0, count = 0;  // the device used, of `count` the driver sees
    std::string name;            // e.g. "NVIDIA H100 80GB HBM3"
    int major = 0, minor = 0;    // compute capability
    std::size_t memory_bytes = 0;
    int multiprocessors = 0;
    int driver_version = 0, runtime_version = 0;  // e.g. 13000 for 13.0
    // Whether this build's kernels run on the device (machine code for it, or PTX the driver
    // compiles for it), asked of an empty kernel; when not, code_error is the runtime's answer.
    // binary_version: that kernel's code as the runtime reports it (90: sm_90).
    bool code_runs = false;
    int binary_version = 0;
    std::string code_error;
};

/// The architectures this build compiled its kernels for: CMake's CMAKE_CUDA_ARCHITECTURES with
/// ',' for ';' ("80", "90-real,90-virtual"), or "emulated" for a hostcuda build.
const char* build_architectures();

/// Device `local_rank` modulo the devices the driver reports, made current (true), else false
/// with `why` saying what is missing (no driver, no device, a driver too old for this build's
/// runtime). local_rank: the process's rank on its machine (0 outside a data-parallel run), so
/// that the processes of a machine spread over its GPUs.
bool probe_device(int local_rank, DeviceInfo* info, std::string* why);

/// The multiprocessors of the current device: probe_device's, or asked of the runtime at the
/// first call before any probe (a launcher may run before the engine probes, as in the GPU
/// tests); 0 when the runtime cannot say, and then asked again at the next call.
int device_multiprocessors();
/// The most shared memory (bytes) a block of that device may opt into beyond the default 48 KiB
/// (cudaFuncAttributeMaxDynamicSharedMemorySize), found the same way.
std::size_t device_block_shared_optin();

/// Raw device memory (cudaMalloc, never managed memory); nullptr when out of memory.
void* device_malloc(std::size_t bytes);
void device_free(void* p);

/// DT_CUDA_POISON=1 (read once): memory whose contents are undefined (every block the engine's
/// device memory hands out, every scratch() call) is first filled with 0xff bytes, on the stream:
/// a float NaN, an integer -1, a flag set. A kernel that reads what nobody wrote then gives NaN
/// or a wrong count instead of a plausible stale value (a debugging aid, off by default: it costs
/// a fill per allocation). poison_undefined(p, n) does that fill when the setting is on.
bool poison_setting();
void poison_undefined(void* p, std::size_t bytes);

// ---- on the stream, in issue order ----
void device_zero(void* p, std::size_t bytes);
void device_copy(void* dst, const void* src, std::size_t bytes);
/// Host to device; returns when the host buffer may be reused, without waiting for the device
/// (the data goes through a page-locked staging buffer; upload.cu).
void copy_from_host(void* dst, const void* host_src, std::size_t bytes);
/// Device to host; waits for everything issued before it.
void copy_to_host(void* host_dst, const void* src, std::size_t bytes);
/// Device to host later (read_later.cu): queues a copy of at most kReadLaterMaxBytes from src
/// into a page-locked slot and returns its ticket (> 0; 0 when not issued: the error is kept)
/// without waiting for the device. take_read waits for that copy alone, which costs nothing
/// once a wait issued after it (copy_to_host, synchronize) has returned, and writes the bytes to
/// host_dst. A ticket is good until kReadLaterSlots later read_later calls; taking it after that
/// records an error. Without page-locked memory read_later copies at once (and waits).
constexpr std::size_t kReadLaterMaxBytes = 256;
constexpr int kReadLaterSlots = 16;
uint64_t read_later(const void* src, std::size_t bytes);
void take_read(uint64_t ticket, void* host_dst, std::size_t bytes);
/// Waits for everything issued so far.
void synchronize();

/// Device scratch memory of at least `bytes` for one launch sequence of a launcher (its contents
/// are undefined; valid until the next scratch() call with the same slot). Grown on demand,
/// never shrunk; nullptr when out of memory (the error is kept for take_error()). Slot 0 is the
/// launchers' own; slot 1 holds what a launcher keeps across a call of another that uses slot 0.
void* scratch(std::size_t bytes, int slot = 0);

/// The tile shape of the GEMM-shaped block programs (kernels/cuda/tile_gemm.h): kAuto (the
/// default: TinyTile, 16 x 16, for a GEMM where SmallTile makes fewer blocks than the device has
/// SMs, LargeTile, 64 x 128, where it makes three per SM, else SmallTile, 32 x 64: launch_shape.h's
/// tiny_tile_for and large_tile_for), or always kSmall, kLarge or kTiny. Each gives the same bits;
/// which is faster where is for a GPU to say (dt_gpu_kernel_bench compares them).
/// DT_CUDA_TILE=auto|small|large|tiny sets a process's choice (anything else: auto);
/// set_tile_choice changes it (the bench's comparisons).
enum class TileChoice { kAuto, kSmall, kLarge, kTiny };
TileChoice tile_choice();
void set_tile_choice(TileChoice choice);

/// How conv.wgrad's exact mode runs (kernels/cuda/conv2d_wgrad.cu): kLeaves (each sample's chain
/// stored, then every element's exact sum of its leaves: the default) or kLimbAtomics (a group
/// of samples' chains folded exactly per output in double, the double added into the
/// accumulators' limbs with integer atomics, conv2d_backward_weight_exact_limbs). The same bits;
/// which is faster is for a GPU to say (dt_gpu_kernel_bench's wgrad rows, dt_gpu_step_bench's
/// "@limbs" presets). DT_CUDA_EXACT_WGRAD=leaves|limbs sets a process's way (anything else:
/// leaves); set_exact_wgrad_way changes it.
enum class ExactWgradWay { kLeaves, kLimbAtomics };
ExactWgradWay exact_wgrad_way();
void set_exact_wgrad_way(ExactWgradWay way);

/// How the per-channel totals run (kernels/cuda/channel_totals.cuh): kStaged (the default: the
/// leaves of rows of at least kStagedMinLen positions by the staged block program of
/// channel_leaves_staged.h, the tree and kahan combines by the block program of
/// channel_combine_block.h) or kRows (one thread per row for every leaf, one per sum and channel
/// for every combine). The same bits; which is faster where is for a GPU to say
/// (dt_gpu_kernel_bench's channel rows). DT_CUDA_CHANNEL_LEAVES=staged|rows
/// sets a process's way (anything else: staged); set_channel_leaves_way changes it.
enum class ChannelLeavesWay { kStaged, kRows };
ChannelLeavesWay channel_leaves_way();
void set_channel_leaves_way(ChannelLeavesWay way);

/// The launch profile (launch_profile.cu; dt_gpu_step_bench --profile): where the device's time
/// goes, launch by launch. start_launch_profile(hold_ms) holds the device for hold_ms first (so
/// that the launches queue up behind it and then run back to back) and records every later
/// launch a launcher checks (check_launch); take_launch_profile stops recording, waits for the
/// device and returns each launch's name and its time on the stream since the launch before
/// (ms; the memsets and copies issued in between included), in issue order.
struct LaunchTime {
    std::string name;
    double ms;
};
void start_launch_profile(double hold_ms);
/// A kernel on the stream that holds the device for `ms` milliseconds (of its global timer).
void hold_device(double ms);
std::vector<LaunchTime> take_launch_profile();
bool launch_profile_on();
void profile_launch(const char* name);  // check_launch's part while the profile is on

/// The first CUDA error since the last call ("" when none), as "<api>: <name>: <description>";
/// clears it (a sticky device error stays in the device and comes back on every later call).
std::string take_error();

/// Records a failure of a launcher (called by the kernels' launch code, never throws).
void note_error(const char* what, int cuda_error);

}  // namespace dt::kernels::cuda
