// SPDX-License-Identifier: MIT
// A thread's place in a CUDA launch grid (1-D grids of 1-D blocks), as the per-thread bodies of
// the CUDA kernels (kernels/cuda/*_bodies.h) see it. On the device GridPos::here() reads
// blockIdx/threadIdx; on the host the tests enumerate every (block, thread) of a launch and call
// the same bodies (for_each_thread), so index arithmetic and the coverage of a grid-stride loop
// are checked without a GPU.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels::common {

struct GridPos {
    uint32_t block = 0, thread = 0;    // blockIdx.x, threadIdx.x
    uint32_t blocks = 1, threads = 1;  // gridDim.x, blockDim.x

    /// This thread's index in the whole grid.
    DT_HD int64_t global() const {
        return static_cast<int64_t>(block) * threads + thread;
    }
    /// Threads in the whole grid: the step of a grid-stride loop.
    DT_HD int64_t stride() const { return static_cast<int64_t>(blocks) * threads; }

#if defined(__CUDACC__) || defined(DT_HOSTCUDA_KERNELS)  // (cmake/dt_hostcuda.cmake)
    __device__ static GridPos here() {
        return GridPos{blockIdx.x, threadIdx.x, gridDim.x, blockDim.x};
    }
#endif
};

/// f(i) for every i in [0, n) this thread owns in a grid-stride loop: i = global(),
/// global() + stride(), ... Across the grid every i is visited exactly once. Not unrolled on the
/// device: launches give most threads one element, and unrolling made every thread work out the
/// trip count with a 64-bit division first.
template <class F>
DT_HD void grid_stride(const GridPos& t, int64_t n, F&& f) {
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int64_t i = t.global(); i < n; i += t.stride()) f(i);
}

/// Host: body(pos) for every thread of a launch of `blocks` x `threads`, block by block.
template <class Body>
inline void for_each_thread(uint32_t blocks, uint32_t threads, Body&& body) {
    for (uint32_t b = 0; b < blocks; ++b)
        for (uint32_t t = 0; t < threads; ++t) body(GridPos{b, t, blocks, threads});
}

}  // namespace dt::kernels::common
