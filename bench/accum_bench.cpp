// SPDX-License-Identifier: MIT
// Cost of each accumulation mode (kernels/common/accum_*.h) on one sum over 1M floats, single
// thread. Counter vs_seq = CPU time / CPU time of the plain sequential sum on data 0, measured
// right after each benchmark (thread CPU time; adjacent, so a busy machine distorts it less).
// Data: Arg 0 = uniform in [-1, 1) (exponents cluster: the worst case for the exact mode, whose
// adds then hit the same limbs), Arg 1 = magnitudes spread over 2^-40 .. 2^40.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/philox.h"
#include "kernels/common/reduce_tree.h"

namespace {

namespace c = dt::kernels::common;
constexpr int64_t kN = 1 << 20;
constexpr int64_t kChunk = 1024;  // leaf length of the chunked modes (tree, kahan, permuted)

const std::vector<float>& data(int kind) {
    static std::vector<float> v[2];
    if (v[kind].empty()) {
        v[kind].resize(kN);
        for (int64_t i = 0; i < kN; ++i) {
            c::Philox4 r = c::philox_draw(1, c::RngStream::kTest, static_cast<uint64_t>(i));
            float u = 2.0f * c::uniform01(r.v[0]) - 1.0f;
            v[kind][i] = kind == 0 ? u : std::ldexp(u, static_cast<int>(r.v[1] % 81) - 40);
        }
    }
    return v[kind];
}

double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// CPU seconds per plain sequential sum, measured right after each benchmark (same machine load:
// on a shared machine the ratio is steadier than either time alone).
double seconds_sequential(int64_t reps) {
    const std::vector<float>& x = data(0);
    const double a = cpu_seconds();
    for (int64_t r = 0; r < reps; ++r) {
        float sum = c::sum_sequential(x.data(), kN);
        benchmark::DoNotOptimize(sum);
    }
    return (cpu_seconds() - a) / static_cast<double>(reps);
}

// Runs f() per iteration; reports GB/s of input read and the ratio to the sequential sum.
template <class F>
void run(benchmark::State& state, F f) {
    const double a = cpu_seconds();
    for (auto _ : state) {
        float s = f();
        benchmark::DoNotOptimize(s);
    }
    const double per = (cpu_seconds() - a) / static_cast<double>(state.iterations());
    state.SetBytesProcessed(state.iterations() * kN * 4);
    const int64_t reps = static_cast<int64_t>(0.1 / per) + 5;  // ~0.1 s of sequential sums
    state.counters["vs_seq"] = per / seconds_sequential(reps < 200 ? reps : 200);
}

void BM_Sequential(benchmark::State& state) {
    const float* x = data(static_cast<int>(state.range(0))).data();
    run(state, [&] { return c::sum_sequential(x, kN); });
}

void BM_Tree(benchmark::State& state) {  // leaves of kChunk in index order, fixed pairwise tree
    const float* x = data(static_cast<int>(state.range(0))).data();
    run(state, [&] {
        c::TreeSum t;
        c::tree_sum_init(t);
        for (int64_t lo = 0; lo < kN; lo += kChunk)
            c::tree_sum_push(t, c::sum_sequential(x + lo, kChunk));
        return c::tree_sum_finish(t);
    });
}

void BM_Kahan(benchmark::State& state) {
    const float* x = data(static_cast<int>(state.range(0))).data();
    run(state, [&] { return c::kahan_sum_chunked(x, kN, kChunk); });
}

void BM_Exact(benchmark::State& state) {  // exact_sum: four interleaved accumulators
    const float* x = data(static_cast<int>(state.range(0))).data();
    run(state, [&] { return c::exact_sum(x, kN); });
}

void BM_ExactOneAcc(benchmark::State& state) {  // plain exact_add loop into one accumulator
    const float* x = data(static_cast<int>(state.range(0))).data();
    run(state, [&] {
        c::ExactAcc a;
        c::exact_init(a);
        for (int64_t i = 0; i < kN; ++i) c::exact_add(a, x[i]);
        return c::exact_value(a);
    });
}

// One accumulator per output (the kernel pattern): rows of `width` outputs, kN / width rows,
// through the accumulator's row functions (init, add a row, the values).
template <class Acc, class Init, class Add, class Value>
void rows(benchmark::State& state, Init init_row, Add add_row, Value value_row) {
    const float* x = data(static_cast<int>(state.range(0))).data();
    const int64_t width = state.range(1);
    std::vector<Acc> acc(width);
    std::vector<float> out(width);
    run(state, [&] {
        init_row(acc.data(), width);
        for (int64_t r = 0; r < kN / width; ++r) add_row(acc.data(), x + r * width, width, 1);
        value_row(acc.data(), out.data(), width, 1);
        return out[0];
    });
}

// width 256: accumulators in L1 (20 KB); width 1024: 80 KB, in L2.
void BM_ExactRows(benchmark::State& state) {
    rows<c::ExactAcc>(state, c::exact_init_row, c::exact_add_row, c::exact_value_row);
}

void BM_KahanRows(benchmark::State& state) {  // same pattern with one KahanSum per output
    rows<c::KahanSum>(state, c::kahan_init_row, c::kahan_add_row, c::kahan_value_row);
}

void BM_SequentialRows(benchmark::State& state) {  // plain float row sums: the reference pattern
    const float* x = data(static_cast<int>(state.range(0))).data();
    const int64_t width = state.range(1);
    std::vector<float> out(width);
    run(state, [&] {
        for (int64_t i = 0; i < width; ++i) out[i] = 0.0f;
        for (int64_t r = 0; r < kN / width; ++r) {
            for (int64_t i = 0; i < width; ++i) out[i] = out[i] + x[r * width + i];
        }
        return out[0];
    });
}

void BM_PermutedLeaves(benchmark::State& state) {  // leaves of kChunk, order drawn every call
    const float* x = data(static_cast<int>(state.range(0))).data();
    std::vector<float> leaf(kN / kChunk);
    std::vector<uint32_t> order(kN / kChunk);
    uint64_t call = 0;
    run(state, [&] {
        c::permute_order(order.data(), kN / kChunk, c::permute_key(7, 0, call++));
        for (int64_t l = 0; l < kN / kChunk; ++l)
            leaf[l] = c::sum_sequential(x + l * kChunk, kChunk);
        return c::permuted_sum(leaf.data(), order.data(), kN / kChunk);
    });
}

void BM_PermutedElements(benchmark::State& state) {  // every element a leaf, order precomputed
    const float* x = data(static_cast<int>(state.range(0))).data();
    std::vector<uint32_t> order(kN);
    c::permute_order(order.data(), kN, c::permute_key(7, 0, 0));
    run(state, [&] { return c::permuted_sum(x, order.data(), kN); });
}

void BM_PermuteOrder(benchmark::State& state) {  // drawing a 1M-leaf order alone
    std::vector<uint32_t> order(kN);
    uint64_t call = 0;
    run(state, [&] {
        c::permute_order(order.data(), kN, c::permute_key(7, 0, call++));
        return static_cast<float>(order[0]);
    });
}

void BM_AtomicOneThread(benchmark::State& state) {  // uncontended CAS loop per element
    const float* x = data(static_cast<int>(state.range(0))).data();
    run(state, [&] {
        float s = 0.0f;
        for (int64_t i = 0; i < kN; ++i) c::atomic_add_float(&s, x[i]);
        return s;
    });
}

BENCHMARK(BM_Sequential)->Arg(0)->Arg(1);
BENCHMARK(BM_Tree)->Arg(0)->Arg(1);
BENCHMARK(BM_Kahan)->Arg(0)->Arg(1);
BENCHMARK(BM_Exact)->Arg(0)->Arg(1);
BENCHMARK(BM_ExactOneAcc)->Arg(0)->Arg(1);
BENCHMARK(BM_SequentialRows)->Args({0, 256});
BENCHMARK(BM_KahanRows)->Args({0, 256});
BENCHMARK(BM_ExactRows)->Args({0, 256})->Args({1, 256})->Args({0, 1024});
BENCHMARK(BM_PermutedLeaves)->Arg(0);
BENCHMARK(BM_PermutedElements)->Arg(0);
BENCHMARK(BM_PermuteOrder);
BENCHMARK(BM_AtomicOneThread)->Arg(0);

}  // namespace
