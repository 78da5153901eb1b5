// SPDX-License-Identifier: MIT
// Cost of each accumulation mode at sites bn.stats, bn.backward, pool.backward and loss, on the
// shapes of SmallCNN(-BN) at batch 128 (28x28 inputs) and MediumCNN at batch 64 (32x32).
// Cases: bn forward (stats + apply), bn backward, max-pool backward with overlapping 3x3 s2 p1
// windows and with 2x2 s2 (no overlap: every mode takes the same loop), loss forward. Threads:
// 2, or DT_BENCH_THREADS (1 gives steadier figures on a shared machine, where a descheduled
// thread stalls every OpenMP barrier). Counter vs_atomic = wall time per call / wall time per
// call of the atomic mode on the same case, measured right after each benchmark (adjacent, so
// load changes distort it less); us = microseconds per call. Run e.g.
// `DT_BENCH_THREADS=1 dt_bench --benchmark_filter=AccumSite --benchmark_min_time=0.1`.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/common/philox.h"
#include "kernels/pool2d.h"
#include "kernels/softmax_xent.h"

namespace {

namespace k = dt::kernels;
namespace c = dt::kernels::common;
using c::AccumMode;

// Threads per case: DT_BENCH_THREADS (default 2).
int bench_threads() {
    const char* e = std::getenv("DT_BENCH_THREADS");
    return e != nullptr && std::atoi(e) > 0 ? std::atoi(e) : 2;
}

std::vector<float> uniform(int64_t n, float lo, float hi, uint32_t tag) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const c::Philox4 r = c::philox_draw(7, c::RngStream::kTest, static_cast<uint64_t>(i), tag);
        v[i] = lo + (hi - lo) * c::uniform01(r.v[0]);
    }
    return v;
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A benchmark case: make(mode) returns the call to time (inputs captured, prepared once).
using Call = std::function<void()>;
using MakeCall = std::function<Call(c::AccumSpec)>;

void run_case(benchmark::State& state, MakeCall make, AccumMode mode) {
    omp_set_num_threads(bench_threads());
    const Call f = make(c::accum_spec(mode, 0x9e3779b97f4a7c15u));
    f();  // warm up (first touch, thread pool)
    const double a = now();
    for (auto _ : state) {
        f();
        benchmark::ClobberMemory();
    }
    const double per = (now() - a) / static_cast<double>(state.iterations());
    const Call g = make(c::accum_spec(AccumMode::kAtomic));
    g();
    const int64_t reps = static_cast<int64_t>(0.05 / per) + 3;
    const double b = now();
    for (int64_t r = 0; r < reps; ++r) g();
    state.counters["vs_atomic"] = per / ((now() - b) / static_cast<double>(reps));
    state.counters["us"] = per * 1e6;
    omp_set_num_threads(omp_get_num_procs());
}

// ---- bn forward (stats + apply) and backward ----
MakeCall bn_case(int64_t N, int64_t C, int64_t H, bool backward) {
    return [=](c::AccumSpec spec) -> Call {
        k::BatchNorm2dParams p{.N = N, .C = C, .HW = H * H};
        p.accum = spec;
        const int64_t n = N * C * H * H;
        auto x = std::make_shared<std::vector<float>>(uniform(n, -2.0f, 2.0f, 1));
        auto dy = std::make_shared<std::vector<float>>(uniform(n, -1.0f, 1.0f, 2));
        auto out = std::make_shared<std::vector<float>>(n);
        auto ch = std::make_shared<std::vector<float>>(7 * C, 1.0f);  // mean var is g b dg db
        float* m = ch->data();
        k::cpu::batchnorm2d_stats(x->data(), m, m + C, m + 2 * C, p);
        if (backward) {
            return [=] {  // ch is captured by name: m points into it
                (void)ch;
                k::cpu::batchnorm2d_backward(dy->data(), x->data(), m, m + 2 * C, m + 3 * C,
                                             out->data(), m + 5 * C, m + 6 * C, true, p);
            };
        }
        return [=] {
            (void)ch;
            k::cpu::batchnorm2d_stats(x->data(), m, m + C, m + 2 * C, p);
            k::cpu::batchnorm2d_apply(x->data(), m, m + 2 * C, m + 3 * C, m + 4 * C, out->data(),
                                      p);
        };
    };
}

// ---- max-pool backward ----
MakeCall pool_case(int64_t N, int64_t C, int64_t H, int kernel, int stride, int pad) {
    return [=](c::AccumSpec spec) -> Call {
        k::Pool2dParams p;
        p.N = N, p.C = C, p.H = H, p.W = H, p.kernel = kernel, p.stride = stride, p.padding = pad;
        p.Ho = p.Wo = k::pool2d_out_size(H, kernel, stride, pad);
        p.accum = spec;
        const int64_t in = N * C * H * H, out = N * C * p.Ho * p.Wo;
        auto x = uniform(in, -1.0f, 1.0f, 3);
        auto y = std::vector<float>(out);
        auto am = std::make_shared<std::vector<int32_t>>(out);
        k::cpu::maxpool2d_forward(x.data(), y.data(), am->data(), p);
        auto dy = std::make_shared<std::vector<float>>(uniform(out, -1.0f, 1.0f, 4));
        auto dx = std::make_shared<std::vector<float>>(in);
        return [=] { k::cpu::maxpool2d_backward(dy->data(), am->data(), dx->data(), p); };
    };
}

// ---- loss forward ----
MakeCall loss_case(int64_t N, int64_t K) {
    return [=](c::AccumSpec spec) -> Call {
        k::SoftmaxXentParams p{.N = N, .K = K};
        p.accum = spec;
        auto l = std::make_shared<std::vector<float>>(uniform(N * K, -4.0f, 4.0f, 5));
        auto lab = std::make_shared<std::vector<int64_t>>(N);
        for (int64_t n = 0; n < N; ++n) (*lab)[n] = (n * 7) % K;
        auto rows = std::make_shared<std::vector<float>>(3 * N + 1);
        return [=] {
            float* r = rows->data();
            k::cpu::softmax_xent_forward(l->data(), lab->data(), r, r + N, r + 2 * N, r + 3 * N, p);
        };
    };
}

// clang-format off
#define DT_SITE_MODES(name, make)                                                          \
    BENCHMARK_CAPTURE(run_case, name/tree, make, AccumMode::kTree)->UseRealTime();         \
    BENCHMARK_CAPTURE(run_case, name/kahan, make, AccumMode::kKahan)->UseRealTime();       \
    BENCHMARK_CAPTURE(run_case, name/exact, make, AccumMode::kExact)->UseRealTime();       \
    BENCHMARK_CAPTURE(run_case, name/permuted, make, AccumMode::kPermuted)->UseRealTime(); \
    BENCHMARK_CAPTURE(run_case, name/atomic, make, AccumMode::kAtomic)->UseRealTime()
// clang-format on

// SmallCNN-BN at batch 128 (28x28): bn1 (16, 28x28), bn2 (32, 14x14); MediumCNN at batch 64
// (32x32): bn1 (16, 32x32), bn3 (64, 8x8), bn5 (256, 2x2).
DT_SITE_MODES(AccumSite_BnFwd_Small_128x16x28, bn_case(128, 16, 28, false));
DT_SITE_MODES(AccumSite_BnFwd_Small_128x32x14, bn_case(128, 32, 14, false));
DT_SITE_MODES(AccumSite_BnFwd_Medium_64x16x32, bn_case(64, 16, 32, false));
DT_SITE_MODES(AccumSite_BnFwd_Medium_64x64x8, bn_case(64, 64, 8, false));
DT_SITE_MODES(AccumSite_BnFwd_Medium_64x256x2, bn_case(64, 256, 2, false));
DT_SITE_MODES(AccumSite_BnBwd_Small_128x16x28, bn_case(128, 16, 28, true));
DT_SITE_MODES(AccumSite_BnBwd_Small_128x32x14, bn_case(128, 32, 14, true));
DT_SITE_MODES(AccumSite_BnBwd_Medium_64x16x32, bn_case(64, 16, 32, true));
DT_SITE_MODES(AccumSite_BnBwd_Medium_64x64x8, bn_case(64, 64, 8, true));
DT_SITE_MODES(AccumSite_BnBwd_Medium_64x256x2, bn_case(64, 256, 2, true));
// Max-pool backward on the pool inputs of SmallCNN (128x16x28x28) and MediumCNN (64x16x32x32,
// 64x64x8x8): 3x3 s2 p1 (overlapping) and 2x2 s2 (the models' pools).
DT_SITE_MODES(AccumSite_MaxPoolBwd3s2_Small_128x16x28, pool_case(128, 16, 28, 3, 2, 1));
DT_SITE_MODES(AccumSite_MaxPoolBwd3s2_Medium_64x16x32, pool_case(64, 16, 32, 3, 2, 1));
DT_SITE_MODES(AccumSite_MaxPoolBwd3s2_Medium_64x64x8, pool_case(64, 64, 8, 3, 2, 1));
DT_SITE_MODES(AccumSite_MaxPoolBwd2s2_Small_128x16x28, pool_case(128, 16, 28, 2, 2, 0));
DT_SITE_MODES(AccumSite_MaxPoolBwd2s2_Medium_64x16x32, pool_case(64, 16, 32, 2, 2, 0));
// Loss: 10 classes at batch 128 and 64; 100 classes at batch 64 (CIFAR-100).
DT_SITE_MODES(AccumSite_Loss_Small_128x10, loss_case(128, 10));
DT_SITE_MODES(AccumSite_Loss_Medium_64x10, loss_case(64, 10));
DT_SITE_MODES(AccumSite_Loss_Medium_64x100, loss_case(64, 100));

}  // namespace
