// SPDX-License-Identifier: MIT
// exact_add_rows (kernels/exact_rows.h) against its reference, one exact_add per leaf: 16 rows of
// 2048 leaves (one wave of a wgrad slice) into 2048 accumulators. Arg 0: leaves within a few
// binades (the int64 fast path), Arg 1: spread over 2^-40 .. 2^40 (mostly the plain path).
// Items/s = leaves added per second.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/exact_rows.h"
#include "kernels/ref/exact_rows_ref.h"

namespace {

namespace c = dt::kernels::common;
constexpr int64_t kRows = 16, kCols = 2048;

std::vector<float> leaves(int kind) {
    std::vector<float> v(static_cast<std::size_t>(kRows * kCols));
    for (std::size_t i = 0; i < v.size(); ++i) {
        c::Philox4 r = c::philox_draw(2, c::RngStream::kTest, i);
        const float u = 2.0f * c::uniform01(r.v[0]) - 1.0f;
        v[i] = kind == 0 ? u : std::ldexp(u, static_cast<int>(r.v[1] % 81) - 40);
    }
    return v;
}

template <bool kFast>
void BM_ExactAddRows(benchmark::State& state) {
    const std::vector<float> x = leaves(static_cast<int>(state.range(0)));
    std::vector<c::ExactAcc> acc(kCols);
    for (auto _ : state) {
        c::exact_init_row(acc.data(), kCols);
        if constexpr (kFast) {
            dt::kernels::cpu::exact_add_rows(acc.data(), x.data(), kCols, kRows, kCols);
        } else {
            dt::kernels::ref::exact_add_rows(acc.data(), x.data(), kCols, kRows, kCols);
        }
        benchmark::DoNotOptimize(acc.data());
    }
    state.SetItemsProcessed(state.iterations() * kRows * kCols);
}

BENCHMARK(BM_ExactAddRows<true>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactAddRows<false>)->Arg(0)->Arg(1);

}  // namespace
