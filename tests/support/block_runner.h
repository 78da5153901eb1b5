// SPDX-License-Identifier: MIT
// Runs a CUDA block program (a host-device function of (GridPos, shared memory, sync)) on the
// host exactly as a GPU would schedule its barriers: every thread of a block is its own
// std::thread, `sync` is a std::barrier of the block's threads (= __syncthreads), and the
// block's shared memory is one host array, filled with NaN before each block (a GPU's shared
// memory starts undefined: a program that reads what no thread wrote shows up). Blocks run one
// after the other on the same threads. Threads interleave freely between barriers, so a program
// that reads shared data before the barrier that publishes it can fail here too.
#pragma once
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "kernels/common/grid.h"

namespace dt::test {

struct HostSync {
    std::barrier<>* b;
    void operator()() const { b->arrive_and_wait(); }
};

/// program(GridPos, float* shared, const HostSync&) for every thread of `blocks` x `threads`.
template <class Program>
void run_blocks(uint32_t blocks, uint32_t threads, int shared_floats, Program&& program) {
    std::vector<float> shared(static_cast<std::size_t>(shared_floats));
    std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
    const HostSync sync{&barrier};
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (uint32_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (uint32_t blk = 0; blk < blocks; ++blk) {
                if (t == 0)
                    std::fill(shared.begin(), shared.end(), std::numeric_limits<float>::quiet_NaN());
                sync();  // the block starts when its shared memory is reset
                program(kernels::common::GridPos{blk, t, blocks, threads}, shared.data(), sync);
                sync();  // and ends when every thread is done
            }
        });
    }
    for (std::thread& th : pool) th.join();
}

}  // namespace dt::test
