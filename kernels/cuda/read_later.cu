// SPDX-License-Identifier: MIT
// read_later / take_read (kernels/cuda/runtime.h): small copies to the host that do not wait.
//
// A training step needs its loss on the host, to stop a diverged run before the update, and
// copy_to_host waits for everything issued before it: read right after the forward, the loss
// made the host wait for the forward before it could issue the backward, a second wait of the
// step besides the gradients' finite check at its end. read_later issues the copy into a slot
// of page-locked memory (cudaMemcpyAsync into page-locked memory does not synchronise) and
// records an event after it; take_read waits for that event, which the step's one wait at the
// end of the backward has already passed, so the value is there without a second wait.
// The slots form a ring: ticket t uses slot t % kReadLaterSlots, and a slot remembers the ticket
// it holds, so a ticket taken after its slot came round again is an error, not a wrong value.
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"

namespace dt::kernels::cuda {

namespace {

struct ReadSlot {
    uint64_t ticket = 0;  // the read it holds (0: none)
    cudaEvent_t copied = nullptr;
    bool issued = false;  // an asynchronous copy into it was issued (else it was copied at once)
};

struct Reads {
    std::mutex mu;
    unsigned char* pinned = nullptr;  // kReadLaterSlots x kReadLaterMaxBytes, page-locked
    unsigned char pageable[kReadLaterSlots][kReadLaterMaxBytes] = {};  // without page-locked memory
    ReadSlot slots[kReadLaterSlots];
    uint64_t next = 1;
    bool no_pinned = false;  // cudaMallocHost failed once: every read copies at once
};

Reads& reads() {
    static Reads* r = new Reads;  // never destroyed: no CUDA calls at process exit
    return *r;
}

/// The slot's page-locked buffer with its event, or nullptr (copy at once) when there is none.
unsigned char* pinned_buffer(Reads& r, ReadSlot& s, int index) {
    if (r.no_pinned) return nullptr;
    if (r.pinned == nullptr) {
        void* p = nullptr;
        if (cudaMallocHost(&p, kReadLaterSlots * kReadLaterMaxBytes) != cudaSuccess) {
            cudaGetLastError();  // not sticky, not fatal: reads copy at once
            r.no_pinned = true;
            return nullptr;
        }
        r.pinned = static_cast<unsigned char*>(p);
    }
    if (s.copied == nullptr &&
        !check_call(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming),
                    "cudaEventCreate (read later)")) {
        return nullptr;
    }
    return r.pinned + static_cast<std::size_t>(index) * kReadLaterMaxBytes;
}

}  // namespace

uint64_t read_later(const void* src, std::size_t bytes) {
    if (bytes > kReadLaterMaxBytes) {
        note_error("read_later: more bytes than a slot holds",
                   static_cast<int>(cudaErrorInvalidValue));
        return 0;
    }
    Reads& r = reads();
    std::lock_guard<std::mutex> lock(r.mu);
    const uint64_t ticket = r.next++;
    const int index = static_cast<int>(ticket % kReadLaterSlots);
    ReadSlot& s = r.slots[index];
    s.ticket = 0;
    // The slot's previous copy, if still queued, is ahead of this one on the stream: in order.
    if (unsigned char* buffer = pinned_buffer(r, s, index)) {
        if (!check_call(cudaMemcpyAsync(buffer, src, bytes, cudaMemcpyDeviceToHost, stream()),
                        "cudaMemcpyAsync(device to host, later)") ||
            !check_call(cudaEventRecord(s.copied, stream()), "cudaEventRecord (read later)")) {
            return 0;
        }
        s.issued = true;
    } else {
        copy_to_host(r.pageable[index], src, bytes);
        s.issued = false;
    }
    s.ticket = ticket;
    return ticket;
}

void take_read(uint64_t ticket, void* host_dst, std::size_t bytes) {
    Reads& r = reads();
    std::lock_guard<std::mutex> lock(r.mu);
    const int index = static_cast<int>(ticket % kReadLaterSlots);
    ReadSlot& s = r.slots[index];
    if (ticket == 0 || s.ticket != ticket || bytes > kReadLaterMaxBytes) {
        note_error(ticket == 0 ? "take_read: the read was not issued"
                               : "take_read: the read's slot was reused (taken too late)",
                   static_cast<int>(cudaErrorInvalidValue));
        return;
    }
    if (s.issued) {
        if (!check_call(cudaEventSynchronize(s.copied), "cudaEventSynchronize (read later)"))
            return;
        std::memcpy(host_dst, r.pinned + static_cast<std::size_t>(index) * kReadLaterMaxBytes,
                    bytes);
    } else {
        std::memcpy(host_dst, r.pageable[index], bytes);
    }
}

}  // namespace dt::kernels::cuda
