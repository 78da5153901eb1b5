// SPDX-License-Identifier: MIT
// Cost of global-norm clipping on the CPU (kernels/grad_norm.h) over a GPT-sized list of
// gradients: 4 blocks of (3C x C, C x C, 4C x C, C x 4C, 4 vectors of C) at C = 192 and the
// 256 x 192 embedding, 1.85M floats. The sum of squares (site grad.norm) runs in every mode; per
// mode, every iteration times one atomic call and one call of the mode; vs_atomic = fastest mode
// call / fastest atomic call (bench_util.h's timed_loop). The clip is timed once.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/grad_norm.h"

namespace {

namespace k = dt::kernels;
using k::common::AccumMode;

constexpr int64_t kC = 192;

/// The gradients' storage and the list the kernels take.
struct Grads {
    std::vector<std::vector<float>> data;
    std::vector<k::GradBuffer> list;
};

Grads gradients() {
    Grads g;
    std::vector<int64_t> sizes = {256 * kC};
    for (int block = 0; block < 4; ++block)
        for (int64_t n : {3 * kC * kC, kC * kC, 4 * kC * kC, 4 * kC * kC, kC, kC, kC, kC})
            sizes.push_back(n);
    uint32_t tag = 1;
    for (int64_t n : sizes) g.data.push_back(dt::bench::uniform(n, tag++));
    for (std::vector<float>& v : g.data)
        g.list.push_back({v.data(), static_cast<int64_t>(v.size())});
    return g;
}

int64_t floats(const Grads& g) {
    int64_t n = 0;
    for (const k::GradBuffer& b : g.list) n += b.n;
    return n;
}

void sum_of_squares(benchmark::State& state, AccumMode mode) {
    const Grads g = gradients();
    float total = 0.0f;
    dt::bench::timed_loop(state, mode, [&](AccumMode m) {
        k::cpu::grad_norm_sq_each(g.list.data(), static_cast<int64_t>(g.list.size()), &total,
                                  {k::common::accum_spec(m, 99)});
    });
    state.SetBytesProcessed(state.iterations() * floats(g) * 4);
}

void clip(benchmark::State& state) {
    Grads g = gradients();  // scaled in place
    const float total = 1e6f;  // norm 1000 > 1: every element scaled
    for (auto _ : state) {
        k::cpu::grad_clip_each(g.list.data(), static_cast<int64_t>(g.list.size()), &total, 1.0f);
        benchmark::DoNotOptimize(g.list.data());
    }
    state.SetBytesProcessed(state.iterations() * floats(g) * 8);
}

const bool registered = [] {
    for (AccumMode m : dt::bench::kAllModes)
        benchmark::RegisterBenchmark(
            (std::string("grad_norm_sq/") + dt::bench::mode_name(m)).c_str(), sum_of_squares, m)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("grad_clip", clip)->Unit(benchmark::kMicrosecond);
    return true;
}();

}  // namespace
