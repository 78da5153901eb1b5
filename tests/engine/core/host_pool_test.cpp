// SPDX-License-Identifier: MIT
// host_pool: big blocks come back on the next allocation of the same size (that is the point:
// no page faults per training step), small ones are never cached, every block is 64-byte
// aligned, the cache has a cap and trim() empties it; tensors use it.
#include "engine/core/host_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "engine/core/tensor.h"

namespace dt {
namespace {

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

TEST(HostPool, ReusesABigBlockOfTheSameSize) {
    host_pool::trim();
    const std::size_t n = host_pool::kPoolMinBytes * 3 + 5;
    void* a = host_pool::allocate(n);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(aligned(a));
    std::memset(a, 1, n);  // the whole block is usable
    host_pool::release(a, n);
    EXPECT_EQ(host_pool::stats().cached_bytes, host_pool::block_size(n));
    const std::size_t hits = host_pool::stats().hits;
    void* other = host_pool::allocate(n + 4096);  // another size: not that block
    EXPECT_NE(other, a);
    void* b = host_pool::allocate(n);
    EXPECT_EQ(b, a);
    EXPECT_EQ(host_pool::stats().hits, hits + 1);
    host_pool::release(b, n);
    host_pool::release(other, n + 4096);
    host_pool::trim();
    EXPECT_EQ(host_pool::stats().cached_bytes, 0u);
}

TEST(HostPool, SmallBlocksAreNotCached) {
    host_pool::trim();
    void* a = host_pool::allocate(100);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(aligned(a));
    host_pool::release(a, 100);
    EXPECT_EQ(host_pool::stats().cached_bytes, 0u);
    EXPECT_EQ(host_pool::block_size(0), 64u);
    EXPECT_EQ(host_pool::block_size(65), 128u);
}

TEST(HostPool, TensorsOfOneStepReuseTheBlocksOfTheLast) {
    host_pool::trim();
    const Shape shape{64, 32, 14, 14};  // a conv activation: 1.6 MB
    const void* first = nullptr;
    {
        Tensor t = Tensor::empty(shape);
        first = t.f32();
        EXPECT_TRUE(aligned(first));
    }
    Tensor again = Tensor::zeros(shape);
    EXPECT_EQ(static_cast<const void*>(again.f32()), first);
    EXPECT_EQ(again.f32()[again.numel() - 1], 0.0f);  // zeros() still zeroes a reused block
}

TEST(HostPool, ATensorTooLargeForMemoryIsAnErrorWithItsSizeAndAHint) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer aborts on an allocation this large instead of failing it";
#endif
    try {
        (void)Tensor::empty({int64_t{1} << 42});  // 16 TiB of floats
        FAIL() << "a 16 TiB tensor was allocated";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("out of memory allocating 17592186044416 bytes (16384.00 GiB) on "
                            "device cpu"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("hint: a smaller --batch-size"), std::string::npos) << what;
    }
}

}  // namespace
}  // namespace dt
