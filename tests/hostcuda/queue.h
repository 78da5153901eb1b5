// SPDX-License-Identifier: MIT
// hostcuda's device state, shared by its runtime API (api.cpp) and its queue (queue.cpp): the
// device's allocations, the queue of deferred work (every stream's, in issue order) and the
// launch being run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "tests/hostcuda/cuda_runtime.h"

struct CUstream_st {
    unsigned flags = 0;
};
struct CUevent_st {
    uint64_t recorded = 0;        // the queue position of its last record (0: never recorded)
    const void* group = nullptr;  // the ordering group of the stream it was recorded on
    bool done = false;            // the queue has run past that record
    double ms = 0;                // host time when it did
};

namespace dt::hostcuda {

inline constexpr std::size_t kSharedPerBlock = std::size_t{48} << 10;
inline constexpr std::size_t kSharedOptin = std::size_t{227} << 10;  // an H100's, per block
inline constexpr int kMultiprocessors = 132;                         // an H100 SXM's

/// The emulated device's memory: $DT_HOSTCUDA_MEMORY_GIB GiB, 8 unless set.
std::size_t memory_limit();

/// One piece of work on the stream.
struct Op {
    enum Kind { kKernel, kCopy, kSet, kEvent, kHost };
    explicit Op(Kind k) : kind(k) {}
    Kind kind;
    uint64_t seq = 0;             // its queue position
    const void* group = nullptr;  // its stream's ordering group (group_of)
    // kKernel (one device thread), kHost (the host function)
    Launch config{1, 1};
    std::function<void()> run;
    // kCopy, kSet
    void* dst = nullptr;
    const void* src = nullptr;          // (a copy from pageable memory: staged.data())
    std::vector<unsigned char> staged;  // a copy from pageable memory: its bytes when issued
    std::size_t bytes = 0;
    int value = 0;
    // kEvent
    cudaEvent_t event = nullptr;
};

using Allocations = std::map<const char*, std::size_t, std::less<>>;  // start, bytes

struct State {
    std::recursive_mutex mu;  // held by every API call, and while queued work runs
    Allocations device, pinned;
    std::size_t device_bytes = 0;
    std::map<const void*, int> max_dynamic_shared;  // by kernel (cudaFuncSetAttribute)
    // Live streams and events: the driver's, as on a GPU (a program need not destroy them).
    std::set<const void*> handles;
    std::deque<Op> queue;
    uint64_t next_seq = 1;
    // The block running now: its shared arrays and the running launch's dynamic shared memory.
    std::vector<std::vector<unsigned char>> shared;
    std::vector<unsigned> shared_taken;  // by thread: how many arrays it has declared (zeroed
                                         // when the block starts: each thread starts once)
    std::vector<unsigned char> dynamic;
};

State& state();

/// Keeps `e` as the calling thread's last error (unless one is kept) and returns it.
cudaError_t fail(cudaError_t e);
/// The calling thread's last error, cleared.
cudaError_t take_last_error();
cudaError_t peek_last_error();

/// Under AddressSanitizer, device memory is poisoned except while queued work runs (and a copy
/// with pageable memory), so that host code touching it, which a GPU would not allow, is
/// reported where it does; device_access(s, true) opens it, (s, false) closes it again.
void device_access(State& s, bool open);
/// The work a stream's work is ordered with, as on a GPU: the legacy default stream (nullptr)
/// and the blocking streams (cudaStreamCreate) wait for each other's earlier work, one group
/// (key nullptr; two blocking streams are ordered with each other here, through the legacy stream
/// on a GPU: stricter); a non-blocking stream (cudaStreamNonBlocking) with nothing but itself,
/// its own group (key: the stream). Work of different groups runs in whatever order the host
/// waits for it, so a legacy-stream copy does not see a non-blocking stream's kernel it did not
/// wait for, and that kernel does not see a legacy-stream memset queued before it.
const void* group_of(cudaStream_t st);
/// Runs the queued work up to and including position `upto` (everything: UINT64_MAX), with
/// device memory open: every group's (a device-wide wait) or `group`'s alone (a wait for a
/// stream or an event).
void drain(State& s, uint64_t upto = UINT64_MAX);
void drain_group(State& s, const void* group, uint64_t upto = UINT64_MAX);
/// Whether work of `group` is still queued.
bool group_pending(const State& s, const void* group);
/// Queues `op`; returns its position. Eager (set_eager): then runs its group's work up to the
/// first host function.
uint64_t push(State& s, Op op);

/// Whether [p, p + bytes) lies inside one allocation of `allocs`.
bool inside(const Allocations& allocs, const void* p, std::size_t bytes);
/// Whether a copy's pointers fit its direction: a device side inside one device allocation (a
/// GPU would fault on anything else), a host side not in device memory.
bool copy_ok(const State& s, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);

}  // namespace dt::hostcuda
