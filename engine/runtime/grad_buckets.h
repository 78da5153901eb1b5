// SPDX-License-Identifier: MIT
// The exchange of a split step's gradients over the processes (engine/runtime/batch_split.h), in
// buckets. The trainable tensors are cut, from the last to the first (the order a backward pass
// finishes them in), into buckets of at least `bucket_elements` elements (the last one smaller).
// A bucket's float gradients go through one Collective::allreduce in the grad.allreduce mode.
// Its exact accumulators go through allreduce_exact_rounded: a tensor's of at least 65,536
// elements in a call of their own, read where they are, the smaller ones gathered into one call.
// Every mode combines each element on its own (collective.h), so any cut gives the bits of one
// exchange of everything.
//
// With overlap the buckets run on a communication thread over a lane of their own
// (Collective::duplicate) while the backward pass goes on. A bucket is handed to the thread
// once every tensor in it is final and every bucket before it was handed over: all processes
// issue the same collectives in the same order, whatever the timing. Without overlap, one
// bucket holds every tensor and runs in finish() on the calling thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/runtime/collective.h"
#include "kernels/common/accum_mode.h"

namespace dt {

/// One tensor's part of the exchange, final: its float gradient, or its exact accumulators per
/// use (ExactUse, batch_split.h). Host tensors (f32; int64 words of ExactAccs), or undefined.
struct GradShare {
    Tensor floats;
    std::vector<Tensor> accs;
};

class GradBuckets {
 public:
    /// `numel`: the elements of each trainable tensor, in their order. `bucket_elements` > 0:
    /// overlap, in buckets of that size, on a lane duplicated from `ranks` (a collective call:
    /// every process constructs it at the same point); 0: one bucket, run in finish().
    GradBuckets(const std::vector<int64_t>& numel, Collective& ranks, int64_t bucket_elements);
    /// Waits for the thread when it is idle; a thread still inside a collective (an exception
    /// ended the step early; the caller is about to end the job) is left to the process's end.
    ~GradBuckets();
    GradBuckets(const GradBuckets&) = delete;
    GradBuckets& operator=(const GradBuckets&) = delete;

    /// A step's exchange in mode `spec` (its grad.allreduce call). A previous step's exchange
    /// left unfinished is finished first.
    void begin(const kernels::common::AccumSpec& spec);
    /// Tensor i's share, final. Once per tensor per step; hands over the buckets it completes.
    void add(std::size_t i, GradShare share);
    bool added(std::size_t i) const;
    /// Hands over the buckets left (a tensor never added counts as empty) and waits for all.
    /// Returns the bytes handed to the collectives. Rethrows an error of the thread.
    int64_t finish();

    /// After finish(): tensor i's float gradient combined over the processes (numel floats),
    /// and the rounded exact sums of its use u; null where the share had none.
    const float* floats(std::size_t i) const;
    const float* rounded(std::size_t i, std::size_t use) const;

    std::size_t buckets() const;
    bool overlapping() const;

 private:
    struct State;
    std::shared_ptr<State> state_;
};

}  // namespace dt
