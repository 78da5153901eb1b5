// SPDX-License-Identifier: MIT
// The `atomic` mode's add (kernels/common/atomic_add.h): no update is lost under contention. The
// order of the adds, and so the rounding of non-integer sums, is nondeterministic by design;
// only order-free facts are tested (integer-valued sums are exact in every order).
#include "kernels/common/atomic_add.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace dt::kernels::common {
namespace {

TEST(AccumAtomic, ReturnsOldValueAndAdds) {
    float x = 1.5f;
    EXPECT_EQ(atomic_add_float(&x, 2.25f), 1.5f);
    EXPECT_EQ(x, 3.75f);
    float row[3] = {0.0f, 1.0f, 2.0f};
    const float add[6] = {1.0f, -9.0f, 2.0f, -9.0f, 3.0f, -9.0f};
    atomic_add_row(row, add, 3, 2);
    EXPECT_EQ(row[0], 1.0f);
    EXPECT_EQ(row[1], 3.0f);
    EXPECT_EQ(row[2], 5.0f);
}

TEST(AccumAtomic, NoLostUpdatesUnderContention) {
    const int threads = 4, adds = 200000;
    float total = 0.0f;
    float row[8] = {};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            const float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
            for (int i = 0; i < adds; ++i) {
                atomic_add_float(&total, (t % 2) ? 1.0f : 2.0f);
                if (i % 16 == 0) atomic_add_row(row, ones, 8);
            }
        });
    }
    for (auto& th : pool) th.join();
    EXPECT_EQ(total, 3.0f * adds * threads / 2);  // 1.2e6 < 2^24: every partial sum is exact
    for (float v : row) EXPECT_EQ(v, static_cast<float>(threads * (adds / 16)));
}

}  // namespace
}  // namespace dt::kernels::common
