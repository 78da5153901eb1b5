// SPDX-License-Identifier: MIT
// dt_gpu_kernel_bench's first lines: one large square GEMM (C = A . B, all n x n, n = 32 x the
// batch up to 4096) with the small and the large tile, in TFLOP/s against the GPU's FP32 peak
// (multiprocessors x FP32 lanes x 2 flops a fused multiply-add x the SM clock). A recipe's
// GEMM-shaped kernels cannot be faster than this GEMM, whose order constraint is only the
// per-output fma chain: the first figures of a GPU separate the tiles' efficiency from what the
// recipe's orders cost. {"op": "gemm_peak", "tile": ..., "shape": ..., "ms": ..., "tflops": ...,
// "fp32_peak_tflops": ..., "of_peak": ...}.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "bench/gpu/kernel_bench_common.h"
#include "kernels/cuda/runtime.h"
#include "kernels/gemm.h"

namespace dt::bench {

/// FP32 lanes a multiprocessor of compute capability major.minor has (the CUDA C Programming
/// Guide's arithmetic-instruction throughput table): 64 on 6.0, 7.x and 8.0, else 128.
inline int fp32_lanes_per_sm(int major, int minor) {
    if (major == 7 || (major == 8 && minor == 0) || (major == 6 && minor == 0)) return 64;
    return 128;
}

/// The device's FP32 peak in TFLOP/s from its SM count, capability and SM clock; 0 when the
/// runtime cannot say.
inline double fp32_peak_tflops() {
    int dev = 0, sms = 0, major = 0, minor = 0, khz = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess) {
        cudaGetLastError();  // an answer, not an error to keep
        return 0;
    }
    return 2.0 * sms * fp32_lanes_per_sm(major, minor) * (khz * 1e3) / 1e12;
}

/// At batch b: n = 32 b, at most 4096 (128: the 4096^3 GEMM, 137 GFLOP).
inline void gemm_peak(Timer& timer, int reps, int64_t b) {
    namespace cu = kernels::cuda;
    const int64_t n = std::min<int64_t>(4096, 32 * b);
    const Tensor a = uniform({n, n}, 41), bm = uniform({n, n}, 42);
    Tensor c = Tensor::empty({n, n}, DType::kF32, Device::kCuda);
    const kernels::GemmParams g{.m = n, .n = n, .k = n};
    const double peak = fp32_peak_tflops(), flop = 2.0 * n * n * n;
    const cu::TileChoice before = cu::tile_choice();
    for (const cu::TileChoice tile : {cu::TileChoice::kSmall, cu::TileChoice::kLarge}) {
        cu::set_tile_choice(tile);
        const double ms =
            median_time(timer, reps, [&] { cu::gemm(a.f32(), bm.f32(), c.f32(), g); });
        const double tflops = ms > 0 ? flop / (ms * 1e-3) / 1e12 : 0;
        std::printf(
            "{\"op\": \"gemm_peak\", \"tile\": \"%s\", \"shape\": \"%s\", \"ms\": %.4f, "
            "\"tflops\": %.2f, \"fp32_peak_tflops\": %.2f, \"of_peak\": %.3f}\n",
            tile == cu::TileChoice::kSmall ? "small" : "large",
            (dims({n, n}) + " . " + dims({n, n})).c_str(), ms, tflops, peak,
            peak > 0 ? tflops / peak : 0.0);
        std::fflush(stdout);
    }
    cu::set_tile_choice(before);
}

}  // namespace dt::bench
