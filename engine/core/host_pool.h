// SPDX-License-Identifier: MIT
// Caching allocator for tensor storage on the host. A training step allocates the same sizes as
// the step before it (activations, gradients, optimizer temporaries); freeing a big block hands
// it back to the OS (glibc maps blocks of 128 KiB and more) and the next step faults every page
// in again. A BlockCache (block_cache.h) over aligned_alloc/free: blocks of at least
// kPoolMinBytes are kept on a free list per size and handed out again. Contents of a reused
// block are whatever it held before, as with malloc: Tensor::empty is uninitialised either way,
// and kernels write every output element they own.
#pragma once
#include <cstddef>

#include "engine/core/block_cache.h"

namespace dt::host_pool {

constexpr std::size_t kAlignment = 64;                    // one cache line
constexpr std::size_t kPoolMinBytes = std::size_t{1} << 16;  // smaller blocks are not cached
constexpr std::size_t kPoolMaxCachedBytes = std::size_t{4} << 30;  // cap of the free lists

/// bytes rounded up to kAlignment (at least kAlignment): the size a block really has.
std::size_t block_size(std::size_t bytes);

/// A kAlignment-aligned block of block_size(bytes) bytes, or nullptr when out of memory.
void* allocate(std::size_t bytes);

/// Returns a block from allocate(bytes) (same bytes). Cached for reuse when big enough and the
/// cache is below its cap, freed otherwise.
void release(void* p, std::size_t bytes);

using Stats = BlockCache::Stats;
Stats stats();

/// Frees every cached block (e.g. before measuring memory, or at the end of a phase).
void trim();

}  // namespace dt::host_pool
