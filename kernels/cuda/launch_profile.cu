// SPDX-License-Identifier: MIT
// The launch profile of runtime.h: where a training step's time on the device goes, kernel by
// kernel, without a profiler on the GPU host (dt_gpu_step_bench --profile). While it is on,
// check_launch (launch.cuh), which every launcher calls after each launch, also records an event
// on the stream after the launch; the time from the event before to a launch's own is that
// launch's time on the stream (with whatever memsets and copies were issued since the launch
// before). A spin kernel issued first holds the device for a while, so that the host queues the
// launches ahead of it and they then run back to back: gaps the host leaves between launches
// would otherwise count as the next kernel's time.
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"

namespace dt::kernels::cuda {

namespace {

struct Profile {
    std::mutex mutex;
    std::vector<cudaEvent_t> events;  // a pool, reused from profile to profile
    std::vector<std::string> names;   // of the launches recorded so far
    cudaEvent_t start = nullptr;
};
Profile& profile() {
    static Profile p;
    return p;
}
std::atomic<bool>& profiling() {
    static std::atomic<bool> on{false};
    return on;
}

/// Holds its thread until `ns` nanoseconds of the GPU's global timer have passed.
__device__ uint64_t global_timer_ns() {
#if defined(DT_HOSTCUDA)
    return dt::hostcuda::global_timer_ns();
#else
    uint64_t t = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#endif
}
__global__ void spin_kernel(uint64_t ns) {
    const uint64_t t0 = global_timer_ns();
    while (global_timer_ns() - t0 < ns) {
    }
}

}  // namespace

void hold_device(double ms) {
    spin_kernel<<<1, 1, 0, stream()>>>(static_cast<uint64_t>(ms * 1e6));
    check_launch("hold_device");
}

bool launch_profile_on() { return profiling().load(std::memory_order_relaxed); }

void start_launch_profile(double hold_ms) {
    profiling().store(false);
    if (hold_ms > 0) hold_device(hold_ms);  // the profile is off: not recorded
    Profile& p = profile();
    const std::lock_guard<std::mutex> lock(p.mutex);
    p.names.clear();
    if (p.start == nullptr && !check_call(cudaEventCreate(&p.start), "cudaEventCreate")) return;
    check_call(cudaEventRecord(p.start, stream()), "cudaEventRecord");
    profiling().store(true);
}

void profile_launch(const char* name) {
    Profile& p = profile();
    const std::lock_guard<std::mutex> lock(p.mutex);
    const std::size_t i = p.names.size();
    if (i == p.events.size()) {
        cudaEvent_t e = nullptr;
        if (!check_call(cudaEventCreate(&e), "cudaEventCreate")) return;
        p.events.push_back(e);
    }
    if (!check_call(cudaEventRecord(p.events[i], stream()), "cudaEventRecord")) return;
    p.names.emplace_back(name);
}

std::vector<LaunchTime> take_launch_profile() {
    profiling().store(false);
    Profile& p = profile();
    const std::lock_guard<std::mutex> lock(p.mutex);
    std::vector<LaunchTime> out;
    if (p.names.empty() ||
        !check_call(cudaEventSynchronize(p.events[p.names.size() - 1]), "cudaEventSynchronize"))
        return out;
    cudaEvent_t before = p.start;
    for (std::size_t i = 0; i < p.names.size(); ++i) {
        float ms = 0;
        check_call(cudaEventElapsedTime(&ms, before, p.events[i]), "cudaEventElapsedTime");
        out.push_back(LaunchTime{p.names[i], ms});
        before = p.events[i];
    }
    p.names.clear();
    return out;
}

}  // namespace dt::kernels::cuda
