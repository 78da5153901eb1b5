// SPDX-License-Identifier: MIT
#include "engine/ops/non_finite_scan.h"

#include "engine/ops/dispatch.h"

namespace dt {

namespace {

/// Both entry points: one batched scan through the device's table (a single tensor is a batch
/// of one). `op` names the caller in error messages.
std::vector<int64_t> scan(std::span<const Tensor> ts, const char* op) {
    std::vector<int64_t> first(ts.size(), -1);
    if (ts.empty()) return first;
    std::vector<kernels::ScanBuffer> buffers;
    buffers.reserve(ts.size());
    for (const Tensor& t : ts) {
        ops_detail::check_f32(t, op, "input");
        DT_CHECK_T(DeviceError, t.device() == ts.front().device(), op,
                   ": the tensors must be on one device, got ", ts.front().str(), " and ", t.str(),
                   " (hint: scan each device's tensors apart)");
        buffers.push_back({t.f32(), t.numel()});
    }
    device_kernels(ts.front().device())
        .first_non_finite_each(buffers.data(), static_cast<int64_t>(buffers.size()), first.data());
    return first;
}

}  // namespace

int64_t first_non_finite(const Tensor& t) {
    return scan(std::span<const Tensor>(&t, 1), "first_non_finite").front();
}

std::vector<int64_t> first_non_finite_each(std::span<const Tensor> ts) {
    return scan(ts, "first_non_finite_each");
}

float element_at(const Tensor& t, int64_t i) {
    ops_detail::check_f32(t, "element_at", "input");
    DT_CHECK_SHAPE(i >= 0 && i < t.numel(), "element_at: index ", i, " is outside ", t.str());
    if (t.device() == Device::kCpu) return t.f32()[i];
    return t.view({t.numel()}).values<float>()[static_cast<std::size_t>(i)];
}

}  // namespace dt
