// SPDX-License-Identifier: MIT
// Helpers shared by the accumulation-mode benches: mode names, Philox test data, and the
// interleaved timing loop that makes ratios to `atomic` steady on a shared machine.
#pragma once
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "kernels/common/accum_mode.h"
#include "engine/noise/reduce_sites.h"
#include "kernels/common/philox.h"

namespace dt::bench {

using kernels::common::AccumMode;

inline constexpr AccumMode kAllModes[] = {AccumMode::kAtomic, AccumMode::kTree, AccumMode::kKahan,
                                          AccumMode::kExact, AccumMode::kPermuted};

/// "tree", "atomic", ... (the names users type, from the reduce-site registry).
inline const char* mode_name(AccumMode m) { return accum_mode_name(m); }

/// n floats uniform in [-1, 1), keyed by (42, tag, index).
inline std::vector<float> uniform(int64_t n, uint32_t tag) {
    namespace c = kernels::common;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const c::Philox4 r = c::philox_draw(42, c::RngStream::kTest, static_cast<uint64_t>(i), tag);
        v[static_cast<std::size_t>(i)] = 2.0f * c::uniform01(r.v[0]) - 1.0f;
    }
    return v;
}

inline double seconds_since(const std::chrono::steady_clock::time_point& t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Each iteration times one call of the atomic mode, then one call of `mode` (manual time = the
/// latter). Counters: min_ms (fastest call of mode), atomic_min_ms, vs_atomic = their ratio.
/// Minimums of adjacent calls: on a shared machine they are far steadier than means.
template <class Fn>
void timed_loop(benchmark::State& state, AccumMode mode, Fn&& call) {
    call(AccumMode::kAtomic);  // warm-up: thread-local buffers, page faults
    call(mode);
    double best = 1e30, best_atomic = 1e30;
    for (auto _ : state) {
        auto t0 = std::chrono::steady_clock::now();
        call(AccumMode::kAtomic);
        best_atomic = std::min(best_atomic, seconds_since(t0));
        t0 = std::chrono::steady_clock::now();
        call(mode);
        const double t = seconds_since(t0);
        best = std::min(best, t);
        state.SetIterationTime(t);
        benchmark::ClobberMemory();
    }
    state.counters["min_ms"] = best * 1e3;
    state.counters["atomic_min_ms"] = best_atomic * 1e3;
    state.counters["vs_atomic"] = best / best_atomic;
}

}  // namespace dt::bench
