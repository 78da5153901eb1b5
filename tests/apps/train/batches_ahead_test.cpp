// SPDX-License-Identifier: MIT
// BatchesAhead (apps/train/batches_ahead.h): the same batches in line and made ahead, batch
// b + 1 made on another thread while batch b is used, a batch taken out of order made in line,
// and a failure to make a batch thrown when that batch is taken, not before.
#include "apps/train/batches_ahead.h"

#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dt {
namespace {

struct Recorder {
    std::mutex mu;
    std::vector<int64_t> made;             // indices, in the order they were made
    std::vector<std::thread::id> made_on;  // by index
    int64_t fail_at = -1;

    explicit Recorder(int64_t count) : made_on(static_cast<std::size_t>(count)) {}
    Batch make(int64_t b) {
        {
            std::lock_guard<std::mutex> lock(mu);
            made.push_back(b);
            made_on[static_cast<std::size_t>(b)] = std::this_thread::get_id();
        }
        if (b == fail_at) throw std::runtime_error("batch " + std::to_string(b) + " is bad");
        Batch batch;
        batch.images = Tensor::full({2, 3}, static_cast<float>(b));
        batch.sample_ids = {b, b + 100};
        return batch;
    }
};

TEST(BatchesAhead, GivesTheSameBatchesInLineAndAhead) {
    for (bool ahead : {false, true}) {
        SCOPED_TRACE(ahead);
        Recorder r(5);
        BatchesAhead batches(
            5, [&r](int64_t b) { return r.make(b); }, ahead);
        for (int64_t b = 0; b < 5; ++b) {
            const Batch batch = batches.take(b);
            EXPECT_EQ(batch.sample_ids, (std::vector<int64_t>{b, b + 100}));
            EXPECT_EQ(batch.images.to_vector(), std::vector<float>(6, static_cast<float>(b)));
        }
        EXPECT_EQ(r.made, (std::vector<int64_t>{0, 1, 2, 3, 4}));  // nothing past the end
        // Ahead, every batch but the first was made on another thread.
        for (std::size_t b = 0; b < 5; ++b)
            EXPECT_EQ(r.made_on[b] == std::this_thread::get_id(), !ahead || b == 0) << b;
    }
}

TEST(BatchesAhead, ABatchTakenOutOfOrderIsMadeInLine) {
    Recorder r(6);
    BatchesAhead batches(
        6, [&r](int64_t b) { return r.make(b); }, /*ahead=*/true);
    EXPECT_EQ(batches.take(2).sample_ids.front(), 2);  // 3 is made ahead
    EXPECT_EQ(batches.take(5).sample_ids.front(), 5);  // not 3: made now, nothing after it
    EXPECT_EQ(r.made_on[5], std::this_thread::get_id());
    EXPECT_EQ(batches.take(0).sample_ids.front(), 0);
    EXPECT_EQ(batches.take(1).sample_ids.front(), 1);
}

TEST(BatchesAhead, AFailureIsThrownWhenItsBatchIsTaken) {
    Recorder r(4);
    r.fail_at = 2;
    BatchesAhead batches(
        4, [&r](int64_t b) { return r.make(b); }, /*ahead=*/true);
    EXPECT_NO_THROW(batches.take(0));
    EXPECT_NO_THROW(batches.take(1));  // batch 2 fails on the other thread meanwhile
    try {
        batches.take(2);
        ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "batch 2 is bad");
    }
    EXPECT_EQ(batches.take(3).sample_ids.front(), 3);  // made in line after the failure
}

}  // namespace
}  // namespace dt
