// SPDX-License-Identifier: MIT
// The vendor reference for cpu::gemm (issue 5): OpenBLAS sgemm next to detrain's GEMM on the same
// problems, one thread (OPENBLAS_NUM_THREADS=1 and omp 1) unless the name says 2threads: square
// 1024^3 and 2048^3, and the per-sample conv GEMMs of SmallCNN (as bench/gemm_bench.cpp) and
// MediumCNN k=3 (CIFAR 32x32: conv2 forward (32, 256, 144), conv4 forward (128, 16, 576),
// conv4 wgrad (128, 576, 16)) and ResNet-18 (stage 1 forward (64, 1024, 576), stage 2 forward
// (128, 256, 1152)), and the chunked forward GEMMs the conv kernels run on small maps. Linked only into this binary (dt_bench_vendor).
//
// OpenBLAS at its best: run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (this project's
// machines may set them to force AVX2 kernels), e.g.
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 build/bench/dt_bench_vendor
// The label of every OpenBLAS case records the core OpenBLAS chose (openblas_get_corename()).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "kernels/gemm.h"

extern "C" char* openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int);

namespace {

using dt::kernels::GemmParams;

struct Shape {
    int m, n, k;
    bool ta, tb;
};

/// One problem's operands and the two libraries' calls on them (C = A B, alpha 1, beta 0).
struct Problem {
    Shape s;
    std::vector<float> a, b, c;
    explicit Problem(Shape shape)
        : s(shape),
          a(static_cast<std::size_t>(s.m) * s.k, 0.5f),
          b(static_cast<std::size_t>(s.k) * s.n, 0.25f),
          c(static_cast<std::size_t>(s.m) * s.n) {}
    void detrain() {
        const GemmParams p{.m = s.m, .n = s.n, .k = s.k, .trans_a = s.ta, .trans_b = s.tb};
        dt::kernels::cpu::gemm(a.data(), b.data(), c.data(), p);
        benchmark::DoNotOptimize(c.data());
    }
    void openblas() {
        cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                    s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(),
                    s.ta ? s.m : s.k, b.data(), s.tb ? s.k : s.n, 0.0f, c.data(), s.n);
        benchmark::DoNotOptimize(c.data());
    }
};

void run(benchmark::State& state, Shape s, bool vendor, int threads) {
    Problem pr(s);
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    for (auto _ : state) vendor ? pr.openblas() : pr.detrain();
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * s.m * s.n * s.k,
                                                   benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(vendor ? std::string("openblas ") + openblas_get_corename()
                          : std::string("detrain ") +
                                dt::kernels::cpu::cpu_isa_name(dt::kernels::cpu::cpu_isa()));
    omp_set_num_threads(omp_get_num_procs());
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// detrain and OpenBLAS on the same problem in one thread, alternating call by call (the order
/// flips every iteration), so the shared machine's drift hits both alike (the per-library
/// cases above run seconds apart). Counters: each library's median GFLOP/s and `ratio`, the
/// median over iterations of detrain's speed / OpenBLAS's in that iteration.
void pair(benchmark::State& state, Shape s) {
    Problem pr(s);
    omp_set_num_threads(1);
    openblas_set_num_threads(1);
    using clock = std::chrono::steady_clock;
    auto timed = [&](bool vendor) {
        const auto t0 = clock::now();
        vendor ? pr.openblas() : pr.detrain();
        return std::chrono::duration<double>(clock::now() - t0).count();
    };
    std::vector<double> td, tb, ratio;
    for (auto _ : state) {
        const bool ours_first = td.size() % 2 == 0;
        const double x = timed(!ours_first), y = timed(ours_first);
        td.push_back(ours_first ? x : y);
        tb.push_back(ours_first ? y : x);
        ratio.push_back(tb.back() / td.back());
        state.SetIterationTime(td.back() + tb.back());
    }
    const double flop = 2.0 * s.m * s.n * s.k;
    state.counters["detrain_GFLOP/s"] = flop / median(td) / 1e9;
    state.counters["openblas_GFLOP/s"] = flop / median(tb) / 1e9;
    state.counters["ratio"] = median(ratio);
    // The problem itself, for the report (perf_report.py prints it beside the name).
    state.counters["m"] = s.m;
    state.counters["n"] = s.n;
    state.counters["k"] = s.k;
    state.counters["trans_a"] = s.ta ? 1.0 : 0.0;
    state.counters["trans_b"] = s.tb ? 1.0 : 0.0;
    state.SetLabel(std::string("openblas ") + openblas_get_corename());
    omp_set_num_threads(omp_get_num_procs());
}

const int registered = [] {
    const std::pair<const char*, Shape> shapes[] = {
        {"Square1024", {1024, 1024, 1024, false, false}},
        {"Square2048", {2048, 2048, 2048, false, false}},
        {"SmallConv2Fwd", {32, 196, 144, false, false}},
        {"SmallConv2Dgrad", {144, 196, 32, true, false}},
        {"SmallConv2Wgrad", {32, 144, 196, false, true}},
        {"SmallConv3Fwd", {32, 49, 288, false, false}},
        {"MediumConv2Fwd", {32, 256, 144, false, false}},
        {"MediumConv4Fwd", {128, 16, 576, false, false}},
        {"MediumConv4Wgrad", {128, 576, 16, false, true}},
        // ResNet-18 (CIFAR) per-sample forward GEMMs of stages 1 and 2 (Co, P, Ci*9).
        {"ResNetS1Fwd", {64, 1024, 576, false, false}},
        {"ResNetS2Fwd", {128, 256, 1152, false, false}},
        // The forward GEMMs as the conv kernels run them on small maps: several samples side by
        // side (kChunkCols = 512 columns): SmallCNN c2 / c3 (2 x 196, 8 x 49), ResNet-18
        // stages 3 / 4 (8 x 64, 32 x 16). (The conv kernels pack the weights once per step;
        // here A is packed per call, as OpenBLAS does.)
        {"SmallConv2FwdChunk", {32, 392, 144, false, false}},
        {"SmallConv3FwdChunk", {32, 392, 288, false, false}},
        {"ResNetS3FwdChunk", {256, 512, 2304, false, false}},
        {"ResNetS4FwdChunk", {512, 512, 4608, false, false}},
        // More data-gradient GEMMs the conv kernels run where dgrad is not a forward convolution
        // (kahan, exact: A = W^T, per sample or, on maps under 128 positions, samples side by
        // side; atomic: one kernel row of taps per product, M = Ci*K): SmallCNN c3 chunk of 8
        // samples, MediumCNN c2 per sample, SmallCNN c2 per kernel row. (The tree mode runs
        // dgrad as a forward convolution.)
        {"SmallConv3DgradChunk", {288, 392, 32, true, false}},
        {"MediumConv2Dgrad", {144, 256, 32, true, false}},
        {"SmallConv2DgradRow", {48, 196, 32, false, false}},
    };
    for (const auto& [name, s] : shapes) {
        // About 2 x 10 GFLOP per pair case: 11 iterations of 2048^3, thousands of the small ones.
        const double flop = 2.0 * s.m * s.n * s.k;
        benchmark::RegisterBenchmark((std::string("GemmPair/") + name).c_str(), pair, s)
            ->UseManualTime()
            ->Iterations(static_cast<int64_t>(std::clamp(1e10 / flop, 11.0, 20001.0)));
        // Each library alone, on 1 and on 2 threads (Gemm2T: run each library in a process of
        // its own; perf_report alternates the processes).
        for (int threads : {1, 2})
            for (bool vendor : {false, true}) {
                const std::string id = std::string(threads == 1 ? "Gemm/" : "Gemm2T/") + name +
                                       (vendor ? "/openblas" : "/detrain");
                benchmark::RegisterBenchmark(id.c_str(), run, s, vendor, threads)->UseRealTime();
            }
    }
    return 0;
}();

}  // namespace
