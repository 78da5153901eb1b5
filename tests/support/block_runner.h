// SPDX-License-Identifier: MIT
// Runs a CUDA block program (a host-device function of (GridPos, shared memory, sync)) on the
// host exactly as a GPU would schedule its barriers: every thread of a block is its own
// std::thread, `sync` is a std::barrier of the block's threads (= __syncthreads), and the
// block's shared memory is one host array, filled with NaN before each block (a GPU's shared
// memory starts undefined: a program that reads what no thread wrote shows up). Threads
// interleave freely between barriers, so a program that reads shared data before the barrier
// that publishes it can fail here too.
// Blocks run two at a time, as a GPU runs a launch's blocks side by side in no fixed order: each
// of kBlockSlots slots has its own threads, barrier and shared memory and takes every other
// block. So two blocks' writes to one global element without an atomic, or a block reading what
// another writes, are races that ThreadSanitizer reports (scripts/sanitize.sh tsan-grid), not an
// order the host happened to give.
#pragma once
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/common/grid.h"

namespace dt::test {

struct HostSync {
    std::barrier<>* b;
    void operator()() const { b->arrive_and_wait(); }
};

inline constexpr uint32_t kBlockSlots = 2;

/// program(GridPos, float* shared, const HostSync&) for every thread of `blocks` x `threads`.
template <class Program>
void run_blocks(uint32_t blocks, uint32_t threads, int shared_floats, Program&& program) {
    const uint32_t slots = blocks < kBlockSlots ? blocks : kBlockSlots;
    std::vector<std::vector<float>> shared(
        slots, std::vector<float>(static_cast<std::size_t>(shared_floats)));
    std::vector<std::unique_ptr<std::barrier<>>> barriers;
    for (uint32_t s = 0; s < slots; ++s)
        barriers.push_back(std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(threads)));
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(slots) * threads);
    for (uint32_t s = 0; s < slots; ++s) {
        for (uint32_t t = 0; t < threads; ++t) {
            pool.emplace_back([&, s, t] {
                const HostSync sync{barriers[s].get()};
                std::vector<float>& mine = shared[s];
                for (uint32_t blk = s; blk < blocks; blk += slots) {
                    if (t == 0)
                        std::fill(mine.begin(), mine.end(),
                                  std::numeric_limits<float>::quiet_NaN());
                    sync();  // the block starts when its shared memory is reset
                    program(kernels::common::GridPos{blk, t, blocks, threads}, mine.data(), sync);
                    sync();  // and ends when every thread of it is done
                }
            });
        }
    }
    for (std::thread& th : pool) th.join();
}

}  // namespace dt::test
