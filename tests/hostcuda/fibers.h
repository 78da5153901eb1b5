// SPDX-License-Identifier: MIT
// hostcuda's block scheduler: the threads of one block as fibers on the calling thread, with
// __syncthreads a barrier among them (tests/hostcuda/cuda_runtime.h says what it emulates).
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

namespace dt::hostcuda {

/// The order of a block's threads in barrier phase `phase` (0, 1, ...): order(phase, ks) makes
/// ks, of `threads` entries, a permutation of 0 .. threads - 1 (ks[k]: the k-th thread to run).
using PhaseOrder = std::function<void(unsigned phase, std::vector<unsigned>& ks)>;

/// Runs `run` once for every thread of a block of `threads`, with threadIdx set for each and
/// __syncthreads a barrier across the block. Within a barrier phase the threads run one at a
/// time, in the order `order` gives the phase. A barrier reached by some threads of the block
/// while others have finished is reported (stderr) and aborts: on a GPU it is undefined
/// behaviour.
void run_block(unsigned threads, const std::function<void()>& run, const PhaseOrder& order);

/// The barrier (__syncthreads): the running fiber waits for the other threads of its block.
void block_barrier();

/// Index of the thread running now, in its block.
unsigned running_thread();

}  // namespace dt::hostcuda
