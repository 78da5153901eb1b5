// SPDX-License-Identifier: MIT
// Where float32 tensors hold their first NaN or Inf (the tape's gradient check, the trainer's
// scan of every gradient). Runs the scan kernel of the tensors' device (kernels/finite.h); not
// differentiable, records nothing.
//
// NonFiniteScan scans the tensors added to it and gives every answer at once: on a GPU the scans
// are queued on the stream and results() is the one wait for the device, however many tensors
// (the tape adds each gradient of a backward). On a device other than the cpu the scans are
// issued kScanBatch tensors at a time (one kernel-table call, one launch on a GPU, instead of one
// per tensor), so a tensor is held until its scan is issued: at most kScanBatch tensors and
// about kScanHeldBytes (a tensor added must not change before results(): gradients do not).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/tensor.h"

namespace dt {

/// The first NaN/Inf of a tensor: its row-major index (-1: none) and its value (+-Inf, or a
/// quiet NaN of its sign: a NaN's payload is not kept).
struct NonFiniteAt {
    int64_t index = -1;
    float value = 0.0f;
    bool found() const { return index >= 0; }
};

class NonFiniteScan {
 public:
    static constexpr std::size_t kScanBatch = 16;
    static constexpr int64_t kScanHeldBytes = int64_t{64} << 20;

    explicit NonFiniteScan(Device device);
    /// Queues the scan of t (float32, on this scan's device; throws DeviceError otherwise);
    /// returns its position in results().
    std::size_t add(const Tensor& t);
    /// Every answer, in the order of add(): one copy to the host.
    std::vector<NonFiniteAt> results();

 private:
    void issue();  // the scans of held_, in one kernel-table call

    Device device_;
    Tensor words_;  // int64 words of kernels/finite.h on the device, capacity words_.numel()
    std::size_t count_ = 0;
    std::vector<Tensor> held_;  // the last added, their scans not issued yet
    int64_t held_bytes_ = 0;
};

/// Row-major index of the first NaN or Inf of t (float32, any device), or -1.
int64_t first_non_finite(const Tensor& t);

/// first_non_finite of each tensor (float32, all on one device), in one scan: on the GPU one
/// wait for the device for all of them.
std::vector<int64_t> first_non_finite_each(std::span<const Tensor> ts);

}  // namespace dt
