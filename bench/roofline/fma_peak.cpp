// SPDX-License-Identifier: MIT
// The FMA ceiling (fma_peak.h). Each thread runs kChains independent chains acc = acc * a + b:
// more chains than FMA latency x pipes (4 x 2 on the machines here), few enough to stay in
// registers (16 ymm, 32 zmm). a < 1 keeps every chain bounded. Timed over the whole parallel
// region, so a slow thread counts.
#include "bench/roofline/fma_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/runtime/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dt::bench {

namespace {

constexpr int kChains = 12;
using Loop = float (*)(int64_t);

#if defined(__x86_64__)
#define DT_FMA_LOOP(name, isa, vec, set1, fmadd, reduce)                    \
    __attribute__((target(isa))) float name(int64_t iters) {                \
        vec acc[kChains];                                                   \
        for (int c = 0; c < kChains; ++c) acc[c] = set1(1.0f + 0.01f * c);  \
        const vec a = set1(0.999999f), b = set1(1e-7f);                     \
        for (int64_t i = 0; i < iters; ++i)                                 \
            for (int c = 0; c < kChains; ++c) acc[c] = fmadd(acc[c], a, b); \
        vec sum = acc[0];                                                   \
        for (int c = 1; c < kChains; ++c) sum = sum + acc[c];               \
        return reduce(sum);                                                 \
    }

__attribute__((target("avx2,fma"))) float first128(__m128 v) { return _mm_cvtss_f32(v); }
__attribute__((target("avx2,fma"))) float first256(__m256 v) { return _mm256_cvtss_f32(v); }
__attribute__((target("avx512f"))) float first512(__m512 v) { return _mm512_cvtss_f32(v); }

DT_FMA_LOOP(chains128, "avx2,fma", __m128, _mm_set1_ps, _mm_fmadd_ps, first128)
DT_FMA_LOOP(chains256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, first256)
DT_FMA_LOOP(chains512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, first512)

#undef DT_FMA_LOOP
#endif

/// Seconds for `threads` threads to run `iters` iterations each.
double run(Loop loop, int threads, int64_t iters) {
    volatile float sink = 0.0f;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    {
        const float r = loop(iters);
#pragma omp critical
        sink = sink + r;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double fma_peak_gflops(int bits, int threads, double seconds) {
    [[maybe_unused]] const bool avx2 = dt::cpu_isa_supported(dt::CpuIsa::kAvx2);
    [[maybe_unused]] const bool avx512 = dt::cpu_isa_supported(dt::CpuIsa::kAvx512);
    Loop loop = nullptr;
#if defined(__x86_64__)
    if (bits == 128 && avx2) loop = chains128;
    if (bits == 256 && avx2) loop = chains256;
    if (bits == 512 && avx512) loop = chains512;
#endif
    if (loop == nullptr) return 0.0;
    // Calibrate: grow the count until one run takes a tenth of the time asked for.
    int64_t iters = 1 << 14;
    double t = run(loop, threads, iters);
    while (t < seconds / 10) {
        iters *= 2;
        t = run(loop, threads, iters);
    }
    iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / t / 3) + 1;
    double best = 0.0;  // the fastest of three runs: the others met a busy moment
    for (int r = 0; r < 3; ++r) {
        const double s = run(loop, threads, iters);
        const double flops = 2.0 * (bits / 32) * kChains * static_cast<double>(iters) * threads;
        if (flops / s > best) best = flops / s;
    }
    return best / 1e9;
}

double read_bandwidth_gbps(int threads) {
    constexpr int64_t kWords = int64_t{1} << 25;  // 256 MiB of uint64
    std::vector<uint64_t> buf(static_cast<std::size_t>(kWords));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < kWords; ++i)
        buf[static_cast<std::size_t>(i)] = static_cast<uint64_t>(i);
    double best = 0.0;  // the fastest of three reads
    for (int r = 0; r < 3; ++r) {
        volatile uint64_t sink = 0;
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
        for (int64_t i = 0; i < kWords; ++i) total += buf[static_cast<std::size_t>(i)];
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sink = total;
        (void)sink;
        best = std::max(best, 8.0 * static_cast<double>(kWords) / s / 1e9);
    }
    return best;
}

}  // namespace dt::bench
