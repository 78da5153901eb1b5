// SPDX-License-Identifier: MIT
#include "engine/core/host_pool.h"

#include <cstdlib>

namespace dt::host_pool {

namespace {

void* system_allocate(std::size_t size) { return std::aligned_alloc(kAlignment, size); }
void system_free(void* p) { std::free(p); }

BlockCache& pool() {
    // Never destroyed: tensors may outlive static destructors.
    static BlockCache* p =
        new BlockCache({system_allocate, system_free}, kPoolMinBytes, kPoolMaxCachedBytes);
    return *p;
}

}  // namespace

std::size_t block_size(std::size_t bytes) {
    const std::size_t n = bytes == 0 ? 1 : bytes;
    return (n + kAlignment - 1) / kAlignment * kAlignment;
}

void* allocate(std::size_t bytes) { return pool().allocate(block_size(bytes)); }
void release(void* block, std::size_t bytes) { pool().release(block, block_size(bytes)); }
Stats stats() { return pool().stats(); }
void trim() { pool().trim(); }

}  // namespace dt::host_pool
