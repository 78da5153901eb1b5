// SPDX-License-Identifier: MIT
// A one-element float32 tensor's value on its way to the host, read without making the host wait
// for the device where that can be avoided (DeviceMemory::to_host_later): a training step reads
// its loss this way right after the forward and takes it after the backward, whose finite check
// is the step's one wait; by then the copy is done. On the cpu the value is copied at once.
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace dt {

class PendingItem {
 public:
    /// Queues the copy of t's value (one element, float32: throws ShapeError, or the dtype
    /// check's error, otherwise). t may be freed afterwards.
    explicit PendingItem(const Tensor& t);
    /// The value: waits for its copy alone if a wait since has not already covered it. Once or
    /// more; on a device, take it before 16 more PendingItems are made there (the copies' slots
    /// go round; a later take throws DeviceError).
    float get();

 private:
    Device device_;
    uint64_t ticket_ = 0;  // of the device's to_host_later; 0 once taken (or immediate)
    float value_ = 0.0f;
};

}  // namespace dt
