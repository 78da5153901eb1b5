// SPDX-License-Identifier: MIT
// Runs a CUDA block program (a host-device function of (GridPos, shared memory, sync)) on the
// host exactly as a GPU would schedule its barriers: block by block, every thread of the block
// as its own std::thread, `sync` a std::barrier of the block's threads (= __syncthreads), the
// block's shared memory one zero-filled host array. Threads interleave freely between barriers,
// so a program that reads shared data before the barrier that publishes it can fail here too.
#pragma once
#include <barrier>
#include <cstdint>
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
    for (uint32_t blk = 0; blk < blocks; ++blk) {
        std::vector<float> shared(static_cast<std::size_t>(shared_floats), 0.0f);
        std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
        const HostSync sync{&barrier};
        std::vector<std::thread> pool;
        pool.reserve(threads);
        for (uint32_t t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                program(kernels::common::GridPos{blk, t, blocks, threads}, shared.data(), sync);
            });
        }
        for (std::thread& th : pool) th.join();
    }
}

}  // namespace dt::test
