// SPDX-License-Identifier: MIT
// Timing on the engine's CUDA stream for the GPU benches: CUDA events around the work, the L2
// cache flushed (a 256 MiB memset) before each timed run, medians over repetitions.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "engine/runtime/cuda_device.h"
#include "kernels/cuda/launch.cuh"

namespace dt::bench {

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

class Timer {
 public:
    Timer() {
        cudaEventCreate(&a_);
        cudaEventCreate(&b_);
        flush_ = nullptr;
        cudaMalloc(&flush_, kFlushBytes);
    }
    ~Timer() {
        cudaEventDestroy(a_);
        cudaEventDestroy(b_);
        cudaFree(flush_);
    }
    void flush_l2() { cudaMemsetAsync(flush_, 0, kFlushBytes, dt::kernels::cuda::stream()); }
    double time(const std::function<void()>& fn) {
        cudaEventRecord(a_, dt::kernels::cuda::stream());
        fn();
        cudaEventRecord(b_, dt::kernels::cuda::stream());
        cudaEventSynchronize(b_);
        float ms = 0;
        cudaEventElapsedTime(&ms, a_, b_);
        dt::cuda_device::check();
        return ms;
    }

 private:
    static constexpr std::size_t kFlushBytes = std::size_t{256} << 20;
    cudaEvent_t a_, b_;
    void* flush_;
};

/// The median of `reps` timed runs of fn, after one untimed (warm-up) run, each after an L2 flush.
inline double median_time(Timer& timer, int reps, const std::function<void()>& fn) {
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
        timer.flush_l2();
        const double m = timer.time(fn);
        if (r > 0) t.push_back(m);
    }
    return median(t);
}

}  // namespace dt::bench
