// SPDX-License-Identifier: MIT
// The per-op hash trail of a training run (issue 22): every op's output in the forward pass,
// every gradient the backward hands to an op's input, and what the trainer adds (the batch, the
// final parameter gradients, the weights after the update), in tape order, each as a 64-bit
// hash of its bits. Two runs that should be identical are compared entry by entry; the first
// entry whose hash differs names the place where they part ways (apps/audit/).
//
// A TraceSink is made current on the thread that trains (ScopedTrace); the tape (record,
// backward) and the trainer (apps/train/trainer_trace.h) add entries to it while it is. Entries
// count from 0 within each step (set_step). The sink can keep the values of one chosen entry
// (keep_values) for the second, detailed pass of an audit (differing elements, ULPs), and can hand
// every entry to a callback as it is made (a trace file written while training). Device tensors are
// copied to the host to be hashed. Hash: hash_bits below, over the tensor's float32 (or int64)
// elements in index order: fixed chunks of 2^16 elements hashed in parallel and the chunk hashes
// folded in chunk order, so the value does not depend on the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/tensor.h"

namespace dt::autograd {

struct TraceEntry {
    int64_t step = 0;    // global step (0-based), set by the trainer
    int64_t index = 0;   // position within the step, from 0
    std::string phase;   // data | forward | backward | gradients | update
    std::string op;      // "conv2d", "batch", "optimizer", ...
    std::string tensor;  // "output", "grad conv1.weight", "grad input 0", "images", ...
    Shape shape;
    uint64_t hash = 0;
    std::vector<uint64_t> row_hashes;  // one per slice along dim 0, when the sink keeps them
};

/// 64-bit hash of n bytes (a multiple of 8 is fastest; see the header).
uint64_t hash_bits(const void* data, std::size_t bytes);
/// hash_bits over a tensor's data (copied to the host first when on a device).
uint64_t hash_tensor(const Tensor& t);

class TraceSink {
 public:
    /// Names for tensors (parameters): entries about them use the name instead of an index.
    void name_tensors(std::unordered_map<const TensorImpl*, std::string> names);
    const std::string* name_of(const Tensor& t) const;

    void set_step(int64_t step);
    void add(const char* phase, const std::string& op, const std::string& tensor, const Tensor& t);

    /// Keeps the float values of entry (step, index) when it is made (second audit pass).
    void keep_values(int64_t step, int64_t index);
    const std::vector<float>& kept() const { return kept_; }
    /// Called with every entry as it is made (e.g. a trace file); entries are still stored
    /// unless store is false.
    void on_entry(std::function<void(const TraceEntry&)> fn, bool store);

    const std::vector<TraceEntry>& entries() const { return entries_; }

    /// Also hash every slice along dim 0 (per-sample rows) of tensors with 2+ dimensions, so that
    /// runs whose batches hold the same samples in another order can be compared row by row.
    void keep_row_hashes(bool on) { row_hashes_ = on; }

 private:
    std::vector<TraceEntry> entries_;
    std::unordered_map<const TensorImpl*, std::string> names_;
    std::function<void(const TraceEntry&)> on_entry_;
    bool store_ = true;
    bool row_hashes_ = false;
    int64_t step_ = 0, next_index_ = 0;
    int64_t keep_step_ = -1, keep_index_ = -1;
    std::vector<float> kept_;
};

/// The sink of this thread, or null (tracing off: the tape does no extra work).
TraceSink* current_trace();

/// Makes `sink` current on this thread for its lifetime.
class ScopedTrace {
 public:
    explicit ScopedTrace(TraceSink& sink);
    ~ScopedTrace();
    ScopedTrace(const ScopedTrace&) = delete;
    ScopedTrace& operator=(const ScopedTrace&) = delete;

 private:
    TraceSink* previous_;
};

}  // namespace dt::autograd
