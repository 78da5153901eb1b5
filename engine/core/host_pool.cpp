// SPDX-License-Identifier: MIT
#include "engine/core/host_pool.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dt::host_pool {

namespace {

struct Pool {
    std::mutex mu;
    std::unordered_map<std::size_t, std::vector<void*>> free;  // block size -> blocks
    Stats stats;
};

Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: tensors may outlive static destructors
    return *p;
}

}  // namespace

std::size_t block_size(std::size_t bytes) {
    const std::size_t n = bytes == 0 ? 1 : bytes;
    return (n + kAlignment - 1) / kAlignment * kAlignment;
}

void* allocate(std::size_t bytes) {
    const std::size_t size = block_size(bytes);
    if (size >= kPoolMinBytes) {
        Pool& p = pool();
        std::lock_guard<std::mutex> lock(p.mu);
        auto it = p.free.find(size);
        if (it != p.free.end() && !it->second.empty()) {
            void* block = it->second.back();
            it->second.pop_back();
            p.stats.cached_bytes -= size;
            ++p.stats.hits;
            return block;
        }
        ++p.stats.misses;
    }
    return std::aligned_alloc(kAlignment, size);
}

void release(void* block, std::size_t bytes) {
    if (block == nullptr) return;
    const std::size_t size = block_size(bytes);
    if (size >= kPoolMinBytes) {
        Pool& p = pool();
        std::lock_guard<std::mutex> lock(p.mu);
        if (p.stats.cached_bytes + size <= kPoolMaxCachedBytes) {
            p.free[size].push_back(block);
            p.stats.cached_bytes += size;
            return;
        }
    }
    std::free(block);
}

Stats stats() {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    return p.stats;
}

void trim() {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    for (auto& [size, blocks] : p.free)
        for (void* b : blocks) std::free(b);
    p.free.clear();
    p.stats.cached_bytes = 0;
}

}  // namespace dt::host_pool
