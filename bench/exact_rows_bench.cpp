// SPDX-License-Identifier: MIT
// The exact row sums (kernels/exact_rows.h) against their reference, one exact_add per term.
// exact_add_rows: 128 rows of 2048 leaves (a batch's leaves, a part of a split batch) into 2048
// accumulators;
// exact_sum_rows: 128 rows of 2048 (a batch's leaves per weight element) rounded to 2048 floats;
// exact_add_columns: the same 128 x 2048 block into one accumulator (a bias / bn channel);
// exact_add_lanes: it as one contiguous array; exact_round (kernels/exact_round.h): 64 x 2048
// such accumulators (a parameter's, at a split batch's end) rounded, over the threads. Arg 0: terms
// within a few binades (the int64 path), Arg 1: spread over 2^-40 .. 2^40 (mostly the per-term
// path). Items/s = terms per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/exact_round.h"
#include "kernels/exact_rows.h"
#include "kernels/ref/exact_round_ref.h"
#include "kernels/ref/exact_rows_ref.h"

namespace {

namespace c = dt::kernels::common;
namespace cpu = dt::kernels::cpu;
namespace ref = dt::kernels::ref;
constexpr int64_t kCols = 2048, kBatch = 128;

std::vector<float> leaves(int kind, int64_t rows = kBatch) {
    std::vector<float> v(static_cast<std::size_t>(rows * kCols));
    for (std::size_t i = 0; i < v.size(); ++i) {
        c::Philox4 r = c::philox_draw(2, c::RngStream::kTest, i);
        const float u = 2.0f * c::uniform01(r.v[0]) - 1.0f;
        v[i] = kind == 0 ? u : std::ldexp(u, static_cast<int>(r.v[1] % 81) - 40);
    }
    return v;
}

/// Runs call(leaves) per iteration on the leaves of kind state.range(0); items: their kBatch x
/// kCols terms per call.
template <class Call>
void time_terms(benchmark::State& state, Call call) {
    const std::vector<float> x = leaves(static_cast<int>(state.range(0)), kBatch);
    for (auto _ : state) call(x.data());
    state.SetItemsProcessed(state.iterations() * kBatch * kCols);
}

template <bool kFast>
void BM_ExactAddRows(benchmark::State& state) {
    constexpr auto add_rows = kFast ? &cpu::exact_add_rows : &ref::exact_add_rows;
    std::vector<c::ExactAcc> acc(kCols);
    time_terms(state, [&](const float* x) {
        c::exact_init_row(acc.data(), kCols);
        add_rows(acc.data(), x, kCols, kBatch, kCols);
        benchmark::DoNotOptimize(acc.data());
    });
}

template <bool kFast>
void BM_ExactSumRows(benchmark::State& state) {
    constexpr auto sum_rows = kFast ? &cpu::exact_sum_rows : &ref::exact_sum_rows;
    std::vector<float> out(kCols);
    time_terms(state, [&](const float* x) {
        sum_rows(out.data(), x, kCols, kBatch, kCols);
        benchmark::DoNotOptimize(out.data());
    });
}

/// kLanes: the block as one contiguous array (exact_add_lanes); else exact_add_columns.
template <bool kFast, bool kLanes>
void BM_ExactAddBlock(benchmark::State& state) {
    time_terms(state, [](const float* x) {
        c::ExactAcc a;
        c::exact_init(a);
        if constexpr (!kFast) {
            ref::exact_add_columns(a, x, kCols, kBatch, kCols);
        } else if constexpr (kLanes) {
            cpu::exact_add_lanes(a, x, kBatch * kCols);
        } else {
            cpu::exact_add_columns(a, x, kCols, kBatch, kCols);
        }
        benchmark::DoNotOptimize(a);
    });
}

/// The rounding of a split batch's accumulators: a batch's leaves per element, 64 x kCols of
/// them (the cpu kernel over the default threads, the reference on one). Items: accumulators.
template <bool kFast>
void BM_ExactRound(benchmark::State& state) {
    constexpr int64_t kCopies = 64, n = kCopies * kCols;
    const std::vector<float> x = leaves(static_cast<int>(state.range(0)), kBatch);
    std::vector<c::ExactAcc> acc(static_cast<std::size_t>(n));
    c::exact_init_row(acc.data(), kCols);
    cpu::exact_add_rows(acc.data(), x.data(), kCols, kBatch, kCols);
    for (int64_t k = 1; k < kCopies; ++k)
        std::copy(acc.begin(), acc.begin() + kCols, acc.begin() + k * kCols);
    std::vector<float> out(static_cast<std::size_t>(n));
    for (auto _ : state) {
        if constexpr (kFast) {
            cpu::exact_round(acc.data(), n, out.data());
        } else {
            ref::exact_round(acc.data(), n, out.data());
        }
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations() * n);
}

BENCHMARK(BM_ExactAddRows<true>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactAddRows<false>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactSumRows<true>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactSumRows<false>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactAddBlock<true, false>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactAddBlock<true, true>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactAddBlock<false, false>)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactRound<true>)->Arg(0)->Arg(1)->UseRealTime();
BENCHMARK(BM_ExactRound<false>)->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
