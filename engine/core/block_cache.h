// SPDX-License-Identifier: MIT
// A cache of memory blocks over a raw allocator, for tensor storage on any device. A training
// step allocates the same sizes as the step before it (activations, gradients, optimizer
// temporaries); going back to the system each time costs page faults on the host and a device
// synchronisation (a free waits for the stream) on a GPU. Blocks of at least `min_cached` bytes are kept on a free
// list per exact size and handed out again; smaller ones go straight to the source. When the
// source is out of memory, the cache frees what it holds and asks once more. Thread-safe (one
// mutex; cached sizes only). A reused block holds whatever it held before, as with malloc.
// The host pool (host_pool.h) and the CUDA device memory (engine/runtime/cuda_device.h) are
// instances; callers round sizes to their alignment before calling.
#pragma once
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dt {

class BlockCache {
 public:
    /// Where blocks come from: allocate(size) returns nullptr when out of memory.
    struct Source {
        void* (*allocate)(std::size_t size) = nullptr;
        void (*free)(void* p) = nullptr;
    };
    struct Stats {
        std::size_t cached_bytes = 0;  // held on the free lists now
        std::size_t hits = 0;          // allocations served from a free list
        std::size_t misses = 0;        // cacheable allocations that went to the source
        std::size_t retries = 0;       // source out of memory: cache freed, asked again
        std::size_t held_bytes = 0;  // taken from the source and not given back (in use or cached)
        std::size_t peak_held_bytes = 0;  // the most held_bytes has been
    };

    BlockCache(Source source, std::size_t min_cached, std::size_t max_cached);
    BlockCache(const BlockCache&) = delete;
    BlockCache& operator=(const BlockCache&) = delete;

    /// A block of exactly `size` bytes, or nullptr when the source has none even after a trim.
    void* allocate(std::size_t size);
    /// Returns a block of allocate(size): cached when big enough and under the cap, else freed.
    void release(void* p, std::size_t size);
    Stats stats() const;
    /// Frees every cached block.
    void trim();

 private:
    void trim_locked();

    Source source_;
    std::size_t min_cached_, max_cached_;
    mutable std::mutex mu_;
    std::unordered_map<std::size_t, std::vector<void*>> free_;  // size -> blocks
    Stats stats_;
};

}  // namespace dt
