// SPDX-License-Identifier: MIT
// BlockCache over a counting source with a capacity: blocks come back per exact size, small ones
// bypass the cache, the cap is kept, and an allocation the source refuses is retried once after
// the cache has given back what it held (the path that keeps a GPU run alive when its memory is
// full of cached blocks of other sizes).
#include "engine/core/block_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace dt {
namespace {

struct Source {
    static inline std::size_t capacity = 0, used = 0, calls = 0;
    static inline std::set<void*> live;
    static void* allocate(std::size_t size) {
        ++calls;
        if (used + size > capacity) return nullptr;
        void* p = std::malloc(size + sizeof(std::size_t));
        *static_cast<std::size_t*>(p) = size;
        used += size;
        live.insert(p);
        return p;
    }
    static void free(void* p) {
        used -= *static_cast<std::size_t*>(p);
        live.erase(p);
        std::free(p);
    }
    static void reset(std::size_t cap) { capacity = cap, used = 0, calls = 0; }
};

TEST(BlockCache, ReusesBlocksOfTheSameSizeAndBypassesSmallOnes) {
    Source::reset(1 << 20);
    {
        BlockCache cache({Source::allocate, Source::free}, 256, 4096);
        void* a = cache.allocate(1024);
        cache.release(a, 1024);
        EXPECT_EQ(cache.stats().cached_bytes, 1024u);
        EXPECT_EQ(cache.allocate(1024), a);  // the same block again
        EXPECT_EQ(cache.stats().hits, 1u);
        void* b = cache.allocate(2048);  // another size: from the source
        EXPECT_NE(b, a);
        void* small = cache.allocate(64);
        cache.release(small, 64);  // below min_cached: straight back
        EXPECT_EQ(cache.stats().cached_bytes, 0u);
        cache.release(a, 1024);
        cache.release(b, 2048);
        EXPECT_EQ(cache.stats().cached_bytes, 3072u);
        void* c = cache.allocate(3072);
        cache.release(c, 3072);  // over the cap of 4096: freed
        EXPECT_EQ(cache.stats().cached_bytes, 3072u);
        cache.trim();
        EXPECT_EQ(cache.stats().cached_bytes, 0u);
        EXPECT_EQ(Source::used, 0u);
    }
    EXPECT_TRUE(Source::live.empty());
}

TEST(BlockCache, OutOfMemoryTrimsTheCacheAndAsksAgain) {
    Source::reset(4096);
    BlockCache cache({Source::allocate, Source::free}, 0, 1 << 20);
    void* a = cache.allocate(3000);
    cache.release(a, 3000);  // cached: the source is nearly full
    void* b = cache.allocate(2000);
    ASSERT_NE(b, nullptr);  // only after the cached 3000 went back
    EXPECT_EQ(cache.stats().retries, 1u);
    EXPECT_EQ(cache.stats().cached_bytes, 0u);
    EXPECT_EQ(cache.allocate(5000), nullptr);  // truly too big: nullptr, no crash
    cache.release(b, 2000);
    cache.trim();
    EXPECT_TRUE(Source::live.empty());
}

TEST(BlockCache, HeldBytesFollowTheSourceAndKeepTheirPeak) {
    // What a run reports as its device memory: every block taken from the source and not given
    // back, cached or in use, small or not; the peak survives trims and releases.
    Source::reset(1 << 20);
    BlockCache cache({Source::allocate, Source::free}, 256, 4096);
    auto expect_held = [&](std::size_t peak) {
        EXPECT_EQ(cache.stats().held_bytes, Source::used);
        EXPECT_EQ(cache.stats().peak_held_bytes, peak);
    };
    void* a = cache.allocate(1024);
    void* small = cache.allocate(100);  // bypasses the cache, still held
    expect_held(1124);
    cache.release(a, 1024);  // cached: still held
    expect_held(1124);
    void* b = cache.allocate(8192);
    expect_held(9316);
    cache.release(b, 8192);  // over the cap: freed
    cache.release(small, 100);
    expect_held(9316);
    cache.trim();
    expect_held(9316);
    EXPECT_EQ(cache.stats().held_bytes, 0u);
    Source::reset(2048);  // a refused allocation changes nothing
    EXPECT_EQ(cache.allocate(4096), nullptr);
    expect_held(9316);
}

}  // namespace
}  // namespace dt
