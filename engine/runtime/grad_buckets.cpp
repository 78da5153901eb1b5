// SPDX-License-Identifier: MIT
// GradBuckets (contract in grad_buckets.h).
#include "engine/runtime/grad_buckets.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "engine/core/error.h"
#include "engine/runtime/exact_round.h"
#include "kernels/common/accum_exact.h"

namespace dt {

namespace c = kernels::common;

namespace {

constexpr std::size_t kNone = SIZE_MAX;
// A tensor's exact accumulators of at least this many elements go through a call of their own.
constexpr int64_t kDirectAccs = int64_t{1} << 16;

struct Bucket {
    std::vector<std::size_t> members;  // tensor indices, last tensor first
    std::size_t missing = 0;           // members not yet added this step
    std::vector<float> floats;         // the members' float gradients, then their sums
    std::vector<c::ExactAcc> accs;     // the members' exact accumulators
    std::vector<float> rounded;        // their sums, rounded once
    int64_t bytes = 0;
};

}  // namespace

// Shared with the thread, which may outlive the GradBuckets (see its destructor).
struct GradBuckets::State {
    Collective* ranks = nullptr;
    std::unique_ptr<Collective> lane;  // the thread's communicator (overlap only)
    std::vector<Bucket> buckets;
    std::vector<std::size_t> bucket_of;
    std::vector<GradShare> shares;  // per tensor: written before its bucket is handed over
    std::vector<bool> added;
    // Per tensor: where its floats and each use's accumulators sit in its bucket's buffers.
    std::vector<std::size_t> float_at;
    std::vector<std::vector<std::size_t>> acc_at;
    c::AccumSpec spec{};
    std::size_t next = 0;  // the first bucket not handed over
    bool open = false;     // a step's exchange began and has not finished

    std::mutex m;
    std::condition_variable cv;
    std::deque<std::size_t> queue;  // handed over, not yet exchanged
    bool busy = false, stop = false;
    std::exception_ptr error;
    std::thread thread;

    // Bucket k's exchange through `via` (on whichever thread runs it). ORDER: none across
    // elements; each element is combined by the mode alone (collective.h). The same calls in
    // the same order on every process: which tensors go direct depends on their sizes only.
    void exchange(std::size_t k, Collective& via) {
        Bucket& b = buckets[k];
        b.floats.clear(), b.accs.clear(), b.bytes = 0;
        struct Direct {
            const c::ExactAcc* accs;
            int64_t n;
            std::size_t tensor, use;
        };
        std::vector<Direct> direct;
        for (const std::size_t i : b.members) {
            const GradShare& s = shares[i];
            float_at[i] = kNone;
            if (s.floats.defined()) {
                float_at[i] = b.floats.size();
                b.floats.insert(b.floats.end(), s.floats.f32(), s.floats.f32() + s.floats.numel());
            }
            for (std::size_t u = 0; u < acc_at[i].size(); ++u) {
                acc_at[i][u] = kNone;
                if (u >= s.accs.size() || !s.accs[u].defined()) continue;
                const auto* a = reinterpret_cast<const c::ExactAcc*>(s.accs[u].data<int64_t>());
                const int64_t n = s.accs[u].numel() / kExactAccWords;
                if (n >= kDirectAccs) {
                    direct.push_back({a, n, i, u});
                } else {
                    acc_at[i][u] = b.accs.size();
                    b.accs.insert(b.accs.end(), a, a + n);
                }
            }
        }
        // Exact sums: the small tensors' accumulators gathered into one call, each large one's
        // read where it is (no copy of 80 bytes per element). Rounded once either way.
        std::size_t total = b.accs.size();
        for (const Direct& d : direct) {
            acc_at[d.tensor][d.use] = total;
            total += static_cast<std::size_t>(d.n);
        }
        b.rounded.resize(total);
        if (!b.accs.empty()) {
            b.bytes += via.allreduce_exact_rounded(
                b.accs.data(), static_cast<int64_t>(b.accs.size()), b.rounded.data());
        }
        for (const Direct& d : direct) {
            b.bytes += via.allreduce_exact_rounded(d.accs, d.n,
                                                   b.rounded.data() + acc_at[d.tensor][d.use]);
        }
        if (!b.floats.empty()) {
            via.allreduce(b.floats.data(), static_cast<int64_t>(b.floats.size()), spec);
            b.bytes += 4 * static_cast<int64_t>(b.floats.size());
        }
        // The gradients' or host copies' references, dropped here.
        for (const std::size_t i : b.members) shares[i] = GradShare();
    }

    void run() {  // the thread: buckets in the order handed over
        std::unique_lock<std::mutex> lock(m);
        for (;;) {
            cv.wait(lock, [&] { return stop || !queue.empty(); });
            if (queue.empty()) return;  // stop, nothing left
            const std::size_t k = queue.front();
            queue.pop_front();
            busy = true;
            lock.unlock();
            try {
                if (!error) exchange(k, *lane);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            busy = false;
            cv.notify_all();
        }
    }

    // Hands buckets over in order while the next one is complete (all of them when `all`).
    void hand_over(bool all) {
        if (!lane) return;  // no overlap: finish() runs them
        std::lock_guard<std::mutex> lock(m);
        for (; next < buckets.size() && (all || buckets[next].missing == 0); ++next)
            queue.push_back(next);
        cv.notify_all();
    }
};

GradBuckets::GradBuckets(const std::vector<int64_t>& numel, Collective& ranks,
                         int64_t bucket_elements)
    : state_(std::make_shared<State>()) {
    DT_CHECK_VALUE(bucket_elements >= 0, "a gradient bucket of ", bucket_elements, " elements");
    State& s = *state_;
    s.ranks = &ranks;
    const std::size_t n = numel.size();
    s.bucket_of.assign(n, 0);
    s.shares.resize(n);
    s.added.assign(n, false);
    s.float_at.assign(n, kNone);
    s.acc_at.assign(n, std::vector<std::size_t>());
    int64_t filled = 0;
    for (std::size_t j = n; j-- > 0;) {  // ORDER: buckets from the last tensor to the first
        if (s.buckets.empty() || (bucket_elements > 0 && filled >= bucket_elements)) {
            s.buckets.emplace_back();
            filled = 0;
        }
        s.buckets.back().members.push_back(j);
        s.bucket_of[j] = s.buckets.size() - 1;
        filled += numel[j];
    }
    if (bucket_elements > 0) {
        s.lane = ranks.duplicate();
        s.thread = std::thread([st = state_] { st->run(); });
    }
}

GradBuckets::~GradBuckets() {
    State& s = *state_;
    if (!s.thread.joinable()) return;
    bool idle = false;
    {
        std::lock_guard<std::mutex> lock(s.m);
        s.stop = true;
        idle = !s.busy && s.queue.empty();
        s.queue.clear();
    }
    s.cv.notify_all();
    if (idle)
        s.thread.join();
    else
        s.thread.detach();  // inside a collective: holds the state until the process ends
}

void GradBuckets::begin(const c::AccumSpec& spec) {
    if (state_->open) (void)finish();
    State& s = *state_;
    s.spec = spec;
    s.next = 0;
    s.open = true;
    for (Bucket& b : s.buckets) b.missing = b.members.size();
    s.added.assign(s.added.size(), false);
}

void GradBuckets::add(std::size_t i, GradShare share) {
    State& s = *state_;
    DT_CHECK(s.open && i < s.added.size() && !s.added[i], "GradBuckets::add: tensor ", i,
             s.open ? " added twice in a step" : " added before begin()");
    s.added[i] = true;
    s.acc_at[i].assign(share.accs.size(), kNone);
    s.shares[i] = std::move(share);
    --s.buckets[s.bucket_of[i]].missing;
    s.hand_over(/*all=*/false);
}

bool GradBuckets::added(std::size_t i) const { return state_->added[i]; }

int64_t GradBuckets::finish() {
    State& s = *state_;
    DT_CHECK(s.open, "GradBuckets::finish without begin()");
    s.open = false;
    if (s.lane) {
        s.hand_over(/*all=*/true);
        std::unique_lock<std::mutex> lock(s.m);
        s.cv.wait(lock, [&] { return s.queue.empty() && !s.busy; });
        if (s.error) {
            const std::exception_ptr e = s.error;
            s.error = nullptr;
            std::rethrow_exception(e);
        }
    } else {
        for (std::size_t k = 0; k < s.buckets.size(); ++k) s.exchange(k, *s.ranks);
    }
    int64_t bytes = 0;
    for (const Bucket& b : s.buckets) bytes += b.bytes;
    return bytes;
}

const float* GradBuckets::floats(std::size_t i) const {
    const State& s = *state_;
    const std::size_t at = s.float_at[i];
    return at == kNone ? nullptr : s.buckets[s.bucket_of[i]].floats.data() + at;
}

const float* GradBuckets::rounded(std::size_t i, std::size_t use) const {
    const State& s = *state_;
    if (use >= s.acc_at[i].size() || s.acc_at[i][use] == kNone) return nullptr;
    return s.buckets[s.bucket_of[i]].rounded.data() + s.acc_at[i][use];
}

std::size_t GradBuckets::buckets() const { return state_->buckets.size(); }
bool GradBuckets::overlapping() const { return static_cast<bool>(state_->lane); }

}  // namespace dt
