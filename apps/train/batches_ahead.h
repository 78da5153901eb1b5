// SPDX-License-Identifier: MIT
// Batches made one ahead on a second host thread. A step on a GPU leaves the host waiting for
// the device (the loss, the finite check of the gradients); meanwhile the next batch can be read,
// augmented and normalised instead of after the step, when the device would wait for it. A
// batch is a pure function of its (epoch, index) (datasets/loader.h; BatchLoader::batch may be
// called concurrently), so its bits do not depend on the thread or the time it is made. On the
// cpu the steps keep every core busy: batches are made in line there (ahead = false).
#pragma once
#include <cstdint>
#include <functional>
#include <future>
#include <utility>

#include "datasets/loader.h"
#include "engine/runtime/threads.h"

namespace dt {

class BatchesAhead {
 public:
    using Make = std::function<Batch(int64_t)>;

    /// Batches 0 .. count-1 of `make`; with `ahead`, taking batch b starts making b + 1.
    BatchesAhead(int64_t count, Make make, bool ahead)
        : count_(count), make_(std::move(make)), ahead_(ahead) {}

    /// Batch b (made now unless it was made ahead: a failure to make it is thrown here, as if it
    /// were made now). Batches are normally taken in order; another b is made in line.
    Batch take(int64_t b) {
        Batch batch;
        if (next_.valid() && next_index_ == b) {
            batch = next_.get();
        } else {
            if (next_.valid()) next_.wait();  // made for nothing: let it finish first
            next_ = {};
            batch = make_(b);
        }
        if (ahead_ && b + 1 < count_) {
            next_index_ = b + 1;
            // The other thread's OpenMP regions (the loader's) take this thread's thread count
            // (--threads): a new thread starts from the process's default.
            next_ = std::async(std::launch::async, [make = make_, b, threads = num_threads()] {
                set_num_threads(threads);
                return make(b + 1);
            });
        }
        return batch;
    }

 private:
    int64_t count_;
    Make make_;
    bool ahead_;
    int64_t next_index_ = -1;
    std::future<Batch> next_;  // batch next_index_, being made (its destructor waits for it)
};

}  // namespace dt
