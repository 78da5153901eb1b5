// SPDX-License-Identifier: MIT
// How cpu::gemm splits a product among threads (private to kernels/cpu/gemm/): as column
// slices, one serial product per thread, or as work units of each (KC, NC) step (gemm.cpp);
// small products and products inside a parallel region run on one thread. The thresholds and
// the measurements behind them. ORDER: no split changes a bit (kernels/gemm.h).
#pragma once
#include <omp.h>

#include <cstdint>

#include "kernels/gemm.h"

namespace dt::kernels::cpu::gemm_detail {

/// Products under this many multiply-adds run on one thread when split into work units
/// (gemm_run). Measured on 2 threads (serial vs parallel GFLOP/s, same process): 128^3 (2.1M)
/// 78 vs 70, 64x256x256 (4.2M) 81 vs 94, 256^3 (16.8M) 85 vs 129: below ~2^22 the fork, the
/// shared A packing and the barriers per K block cost more than the second thread brings.
constexpr int64_t kMinParallelMacs = int64_t{1} << 22;

/// Products of at least kMinSliceMacs multiply-adds and kMinSliceCols columns per thread are
/// split into column slices instead, one serial product per thread: one fork, no barrier, each
/// thread packs its own operands. 2 threads, GFLOP/s, slices vs work units: 128x256x1152 145
/// vs 123, 1024x128x1024 132 vs 95; slices vs serial: 32x392x288 (3.6M) 125 vs 75, 32x392x144
/// (1.8M) 116 vs 82. Below ~1.5M the second thread's wake-up is not reliably paid back
/// (32x256x144, 1.2M: 0.9x the serial product in alternating A/B). Slices are whole multiples
/// of kSliceAlign columns (every NR divides it); the last takes the rest.
constexpr int64_t kMinSliceMacs = int64_t{3} << 19;
constexpr int64_t kMinSliceCols = 64;
constexpr int64_t kSliceAlign = 16;

/// Threads that may share a product as work units: 1 inside a parallel region, for small
/// products (under kMinParallelMacs) or when the caller asked for a serial one.
inline int64_t gemm_threads(const GemmParams& p) {
    if (!p.parallel || p.m * p.n * p.k < kMinParallelMacs || omp_in_parallel()) return 1;
    return omp_get_max_threads();
}

/// Threads that share a product as column slices (1: not split so).
inline int64_t slice_threads(const GemmParams& p) {
    if (!p.parallel || p.m * p.n * p.k < kMinSliceMacs || omp_in_parallel()) return 1;
    const int64_t threads = omp_get_max_threads();
    return p.n >= threads * kMinSliceCols ? threads : 1;
}

/// Runs run_slice(j0, params) for the column slices [j0, j0 + params.n) of a product, one serial
/// product per thread (params: p's with the slice's n, leading dimensions resolved, serial).
/// Every element is computed by the same code over the same K blocks in any slice, so the split
/// changes no bit. False (nothing run) when the product is not to be split.
template <class F>
bool for_column_slices(const GemmParams& p, F&& run_slice) {
    const int64_t threads = slice_threads(p);
    if (threads == 1) return false;
    GemmParams q = p;
    q.lda = gemm_lda(p), q.ldb = gemm_ldb(p), q.ldc = gemm_ldc(p), q.parallel = false;
#pragma omp parallel num_threads(static_cast<int>(threads))
    {
        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t per = p.n / nt / kSliceAlign * kSliceAlign, j0 = t * per;
        GemmParams slice = q;
        slice.n = t + 1 == nt ? p.n - j0 : per;
        run_slice(j0, slice);
    }
    return true;
}

}  // namespace dt::kernels::cpu::gemm_detail
