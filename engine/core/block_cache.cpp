// SPDX-License-Identifier: MIT
#include "engine/core/block_cache.h"

namespace dt {

BlockCache::BlockCache(Source source, std::size_t min_cached, std::size_t max_cached)
    : source_(source), min_cached_(min_cached), max_cached_(max_cached) {}

void* BlockCache::allocate(std::size_t size) {
    if (size >= min_cached_) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = free_.find(size);
        if (it != free_.end() && !it->second.empty()) {
            void* block = it->second.back();
            it->second.pop_back();
            stats_.cached_bytes -= size;
            ++stats_.hits;
            return block;
        }
        ++stats_.misses;
    }
    void* p = source_.allocate(size);
    std::lock_guard<std::mutex> lock(mu_);
    if (p == nullptr) {
        // Out of memory: what the cache holds (other sizes) may be what is missing.
        if (stats_.cached_bytes == 0) return nullptr;
        ++stats_.retries;
        trim_locked();
        p = source_.allocate(size);
        if (p == nullptr) return nullptr;
    }
    stats_.held_bytes += size;
    if (stats_.held_bytes > stats_.peak_held_bytes) stats_.peak_held_bytes = stats_.held_bytes;
    return p;
}

void BlockCache::release(void* block, std::size_t size) {
    if (block == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (size >= min_cached_ && stats_.cached_bytes + size <= max_cached_) {
        free_[size].push_back(block);
        stats_.cached_bytes += size;
        return;
    }
    source_.free(block);
    stats_.held_bytes -= size;
}

BlockCache::Stats BlockCache::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

void BlockCache::trim() {
    std::lock_guard<std::mutex> lock(mu_);
    trim_locked();
}

void BlockCache::trim_locked() {
    for (auto& [size, blocks] : free_)
        for (void* b : blocks) source_.free(b);
    free_.clear();
    stats_.held_bytes -= stats_.cached_bytes;
    stats_.cached_bytes = 0;
}

}  // namespace dt
