// SPDX-License-Identifier: MIT
// hostcuda's queue: the stream's deferred work and how it runs (launches block by block, copies,
// events), launch checks, shared memory, errors (tests/hostcuda/cuda_runtime.h says what it
// emulates and what not).
#include "tests/hostcuda/queue.h"

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/hostcuda/fibers.h"

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace dt::hostcuda {

std::size_t memory_limit() {
    const char* gib = std::getenv("DT_HOSTCUDA_MEMORY_GIB");
    return (gib != nullptr ? std::strtoull(gib, nullptr, 10) : 8) << 30;
}

State& state() {
    static State* s = new State;  // never destroyed: no order problems at exit
    return *s;
}

namespace {

thread_local cudaError_t last_error = cudaSuccess;

/// DT_HOSTCUDA_ORDER: the order of a launch's blocks, and of a block's threads within each
/// barrier phase. A kernel whose results depend on it, which a GPU does not fix, gives other
/// results in another order.
///   forward (unset): blocks first to last; threads forward in even phases, backward in odd ones
///   backward: blocks last to first; threads backward in even phases, forward in odd ones
///   shuffle[:SEED]: every launch's blocks and every phase's threads in a random order, drawn
///     from SEED (replayable) or else from a seed of its own, said on stderr: as on a GPU, a run
///     that depends on the order differs from run to run
struct LaunchOrder {
    enum Kind { kForward, kBackward, kShuffle } kind = kForward;
    std::mt19937_64 draw;
};

[[noreturn]] void bad_order(const std::string& text, const char* why) {
    std::fprintf(stderr, "hostcuda: DT_HOSTCUDA_ORDER=%s: %s\n", text.c_str(), why);
    std::abort();
}

LaunchOrder parse_launch_order(const char* v) {
    const std::string text = v != nullptr && *v != '\0' ? v : "forward";
    LaunchOrder o;
    if (text == "forward") return o;
    if (text == "backward") {
        o.kind = LaunchOrder::kBackward;
        return o;
    }
    if (text != "shuffle" && text.rfind("shuffle:", 0) != 0)
        bad_order(text, "forward, backward or shuffle[:SEED]");
    o.kind = LaunchOrder::kShuffle;
    uint64_t seed = 0;
    if (text == "shuffle") {
        seed = std::random_device{}();
        std::fprintf(stderr,
                     "hostcuda: blocks and threads shuffled with seed %llu "
                     "(DT_HOSTCUDA_ORDER=shuffle:%llu replays it)\n",
                     static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    } else {
        const char* digits = text.c_str() + 8;
        char* end = nullptr;
        seed = std::strtoull(digits, &end, 10);
        if (end == digits || *end != '\0') bad_order(text, "the seed is not a number");
    }
    o.draw.seed(seed);
    return o;
}

LaunchOrder& launch_order() {
    static LaunchOrder o = parse_launch_order(std::getenv("DT_HOSTCUDA_ORDER"));
    return o;
}

void run_launch(State& s, const Op& op) {
    const Launch& l = op.config;
    gridDim = l.grid;
    blockDim = l.block;
    const unsigned threads = l.block.x * l.block.y * l.block.z;
    LaunchOrder& order = launch_order();
    const uint64_t blocks = uint64_t{l.grid.x} * l.grid.y * l.grid.z;
    std::vector<uint64_t> shuffled;  // the blocks in the order they run (shuffle)
    if (order.kind == LaunchOrder::kShuffle) {
        shuffled.resize(blocks);
        std::iota(shuffled.begin(), shuffled.end(), uint64_t{0});
        std::shuffle(shuffled.begin(), shuffled.end(), order.draw);
    }
    const PhaseOrder phases = [&order](unsigned phase, std::vector<unsigned>& ks) {
        std::iota(ks.begin(), ks.end(), 0u);
        if (order.kind == LaunchOrder::kShuffle) {
            std::shuffle(ks.begin(), ks.end(), order.draw);
        } else if ((phase % 2 == 0) == (order.kind == LaunchOrder::kBackward)) {
            std::reverse(ks.begin(), ks.end());
        }
    };
    for (uint64_t k = 0; k < blocks; ++k) {
        const uint64_t b = order.kind == LaunchOrder::kShuffle    ? shuffled[k]
                           : order.kind == LaunchOrder::kBackward ? blocks - 1 - k
                                                                  : k;
        blockIdx = uint3{static_cast<unsigned>(b % l.grid.x),
                         static_cast<unsigned>(b / l.grid.x % l.grid.y),
                         static_cast<unsigned>(b / l.grid.x / l.grid.y)};
        s.shared.clear();
        s.shared_taken.assign(threads, 0);
        s.dynamic.assign(l.shared, 0xff);
        run_block(threads, op.run, phases);
    }
}

void execute(State& s, Op& op) {
    switch (op.kind) {
        case Op::kKernel:
            run_launch(s, op);
            break;
        case Op::kCopy:
            std::memmove(op.dst, op.src, op.bytes);
            break;
        case Op::kSet:
            std::memset(op.dst, op.value, op.bytes);
            break;
        case Op::kEvent:
            if (op.event->recorded == op.seq) {  // (not recorded again since)
                op.event->done = true;
                op.event->ms = static_cast<double>(global_timer_ns()) * 1e-6;
            }
            break;
        case Op::kHost:
            op.run();
            break;
    }
}

}  // namespace

cudaError_t fail(cudaError_t e) {
    if (last_error == cudaSuccess) last_error = e;
    return e;
}
cudaError_t take_last_error() {
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t peek_last_error() { return last_error; }

bool inside(const Allocations& allocs, const void* p, std::size_t bytes) {
    const char* c = static_cast<const char*>(p);
    auto it = allocs.upper_bound(c);
    if (it == allocs.begin()) return false;
    --it;
    return c >= it->first && c + bytes <= it->first + it->second;
}

void device_access(State& s, bool open) {
#if defined(__SANITIZE_ADDRESS__)
    for (const auto& [p, n] : s.device) {
        if (open) {
            ASAN_UNPOISON_MEMORY_REGION(p, n);
        } else {
            ASAN_POISON_MEMORY_REGION(p, n);
        }
    }
#else
    (void)s;
    (void)open;
#endif
}

const void* group_of(cudaStream_t st) {
    return st != nullptr && (st->flags & cudaStreamNonBlocking) != 0 ? st : nullptr;
}

namespace {

/// Runs the queued ops with seq <= upto that `matches`, in issue order; the others stay queued
/// where they are. Device memory is open while they run.
template <class Matches>
void drain_where(State& s, uint64_t upto, Matches&& matches) {
    bool opened = false;
    for (std::size_t k = 0; k < s.queue.size() && s.queue[k].seq <= upto;) {
        if (!matches(s.queue[k])) {
            ++k;
            continue;
        }
        if (!opened) device_access(s, opened = true);
        Op op = std::move(s.queue[k]);
        s.queue.erase(s.queue.begin() + static_cast<std::ptrdiff_t>(k));
        execute(s, op);
    }
    if (opened) device_access(s, false);
}

}  // namespace

void drain(State& s, uint64_t upto) {
    drain_where(s, upto, [](const Op&) { return true; });
}

void drain_group(State& s, const void* group, uint64_t upto) {
    drain_where(s, upto, [group](const Op& op) { return op.group == group; });
}

bool group_pending(const State& s, const void* group) {
    return std::any_of(s.queue.begin(), s.queue.end(),
                       [group](const Op& op) { return op.group == group; });
}

namespace {
bool& eager() {
    static bool on = false;
    return on;
}
}  // namespace

void set_eager(bool on) {
    std::lock_guard<std::recursive_mutex> lock(state().mu);
    eager() = on;
}

uint64_t push(State& s, Op op) {
    op.seq = s.next_seq++;
    const uint64_t seq = op.seq;
    const void* group = op.group;
    s.queue.push_back(std::move(op));
    if (eager()) {  // the group's work up to its first host function, which holds the rest
        uint64_t upto = UINT64_MAX;
        for (const Op& q : s.queue)
            if (q.group == group && q.kind == Op::kHost) upto = std::min(upto, q.seq - 1);
        drain_group(s, group, upto);
    }
    return seq;
}

bool copy_ok(const State& s, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    const bool dst_dev = inside(s.device, dst, bytes), src_dev = inside(s.device, src, bytes);
    switch (kind) {
        case cudaMemcpyHostToDevice:
            return dst_dev && !inside(s.device, src, 1);
        case cudaMemcpyDeviceToHost:
            return src_dev && !inside(s.device, dst, 1);
        case cudaMemcpyDeviceToDevice:
            return dst_dev && src_dev;
        default:
            return false;  // the engine names every copy's direction
    }
}

uint64_t global_timer_ns() {
    using namespace std::chrono;
    return static_cast<uint64_t>(
        duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count());
}

cudaError_t set_function_attribute(const void* kernel, cudaFuncAttribute attr, int value) {
    State& s = state();
    std::lock_guard<std::recursive_mutex> lock(s.mu);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || static_cast<std::size_t>(value) > kSharedOptin)
            return fail(cudaErrorInvalidValue);
        s.max_dynamic_shared[kernel] = value;
        return cudaSuccess;
    }
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
        return value < -1 || value > 100 ? fail(cudaErrorInvalidValue) : cudaSuccess;
    }
    return fail(cudaErrorInvalidValue);
}

void enqueue_launch(const void* kernel, const Launch& config, std::function<void()> run) {
    State& s = state();
    std::lock_guard<std::recursive_mutex> lock(s.mu);
    const dim3 g = config.grid, b = config.block;
    const uint64_t threads = uint64_t{b.x} * b.y * b.z;
    if (threads == 0 || threads > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 ||
        g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
        fail(cudaErrorInvalidConfiguration);
        return;
    }
    if (config.shared > kSharedPerBlock) {
        auto it = s.max_dynamic_shared.find(kernel);
        if (it == s.max_dynamic_shared.end() ||
            config.shared > static_cast<std::size_t>(it->second)) {
            fail(cudaErrorInvalidValue);  // what a GPU answers: more than the kernel may have
            return;
        }
    }
    Op op(Op::kKernel);
    op.group = group_of(config.stream);
    op.config = config;
    op.run = std::move(run);
    push(s, std::move(op));
}

void* shared_array(std::size_t bytes) {
    State& s = state();  // (the queue's lock is held: a block runs inside drain)
    const unsigned t = running_thread();
    const unsigned k = s.shared_taken[t]++;
    if (k == s.shared.size()) s.shared.emplace_back(bytes + 64, 0xff);  // (k <= size: one a call)
    if (s.shared[k].size() != bytes + 64) {
        std::fprintf(stderr,
                     "hostcuda: thread %u declared shared array %u unlike the block's first "
                     "thread to run\n",
                     t, k);
        std::abort();
    }
    // 64-byte aligned, as every __align__ of the kernels asks at most.
    void* p = s.shared[k].data();
    std::size_t space = bytes + 64;
    return std::align(64, bytes, p, space);
}

void* dynamic_shared() {
    State& s = state();
    return s.dynamic.empty() ? nullptr : s.dynamic.data();
}

}  // namespace dt::hostcuda

void __syncthreads() { dt::hostcuda::block_barrier(); }

long long clock64() {
    static long long cycles = 0;
    return cycles += 1'000'000;
}
