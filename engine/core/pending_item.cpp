// SPDX-License-Identifier: MIT
#include "engine/core/pending_item.h"

#include "engine/core/backend.h"

namespace dt {

PendingItem::PendingItem(const Tensor& t) : device_(t.device()) {
    DT_CHECK_SHAPE(t.numel() == 1, "PendingItem needs a one-element tensor, got ", t.str());
    const DeviceMemory& m = device_memory(device_);
    if (m.to_host_later == nullptr) {
        m.to_host(&value_, t.data<float>(), sizeof value_);
        return;
    }
    ticket_ = m.to_host_later(t.data<float>(), sizeof value_);
}

float PendingItem::get() {
    if (ticket_ != 0) {
        device_memory(device_).take_later(ticket_, &value_, sizeof value_);
        ticket_ = 0;
    }
    return value_;
}

}  // namespace dt
