// SPDX-License-Identifier: MIT
// What dt_gpu_kernel_bench's parts share: timing on the engine's CUDA stream (CUDA events around
// the work, the L2 cache flushed by a 256 MiB memset before each timed run, medians over
// repetitions) and device tensors of Philox values as inputs.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/runtime/cuda_device.h"
#include "kernels/common/philox.h"
#include "kernels/cuda/launch.cuh"

namespace dt::bench {

/// A cuda tensor of `shape` with Philox values in [-1, 1) keyed by `tag`, requiring a gradient
/// (the ops' inputs).
inline Tensor uniform(const Shape& shape, uint32_t tag) {
    namespace kc = kernels::common;
    std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
    for (std::size_t i = 0; i < v.size(); ++i) {
        const kc::Philox4 r = kc::philox_draw(7, kc::RngStream::kTest, i, tag);
        v[i] = 2.0f * kc::uniform01(r.v[0]) - 1.0f;
    }
    Tensor t = Tensor::from_vector(shape, v).to(Device::kCuda);
    t.set_requires_grad(true);
    return t;
}

/// "128x16x14x14": a shape as the bench's JSON lines name it.
inline std::string dims(const Shape& d) {
    std::string s;
    for (const int64_t v : d) {
        if (!s.empty()) s += 'x';
        s += std::to_string(v);
    }
    return s;
}

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

/// Two ways of one computation (two settings giving the same bits, e.g. a tile shape): run(out)
/// timed by median_time after set(0), then after set(1), into a device buffer of n floats;
/// ms[w] per way and whether both left the same bits in it.
struct TwoWays {
    double ms[2];
    bool same_bits;
};
inline TwoWays time_two_ways(Timer& timer, int reps, int64_t n, const std::function<void(int)>& set,
                             const std::function<void(float*)>& run) {
    Tensor out = Tensor::empty({n}, DType::kF32, Device::kCuda);
    TwoWays r{};
    std::vector<float> bits[2];
    for (int w = 0; w < 2; ++w) {
        set(w);
        r.ms[w] = median_time(timer, reps, [&] { run(out.f32()); });
        bits[w] = out.to_vector();
    }
    r.same_bits = std::memcmp(bits[0].data(), bits[1].data(), bits[0].size() * sizeof(float)) == 0;
    return r;
}

}  // namespace dt::bench
