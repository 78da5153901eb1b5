// SPDX-License-Identifier: MIT
#include "engine/ops/non_finite_scan.h"

#include <bit>

#include "engine/core/backend.h"
#include "engine/ops/dispatch.h"
#include "kernels/finite.h"

namespace dt {

namespace {
constexpr int64_t kFirstCapacity = 256;  // words, doubled when full
}  // namespace

NonFiniteScan::NonFiniteScan(Device device) : device_(device) {}

std::size_t NonFiniteScan::add(const Tensor& t) {
    ops_detail::check_f32(t, "NonFiniteScan::add", "input");
    DT_CHECK_T(DeviceError, t.device() == device_, "NonFiniteScan::add: a scan on ",
               device_name(device_), " got ", t.str(), " (hint: scan each device's tensors apart)");
    const auto n = static_cast<int64_t>(count_);
    if (!words_.defined() || n == words_.numel()) {
        // Zeroed (kNoneFound) once for all the scans it will hold; grown by copying on the
        // device, in stream order: the queued scans' words come along.
        Tensor grown = Tensor::zeros({n == 0 ? kFirstCapacity : 2 * n}, DType::kI64, device_);
        if (n > 0) {
            device_memory(device_).copy(grown.data<int64_t>(), words_.data<int64_t>(),
                                        static_cast<std::size_t>(n) * sizeof(int64_t));
        }
        words_ = grown;
    }
    held_.push_back(t);
    held_bytes_ += t.numel() * static_cast<int64_t>(sizeof(float));
    ++count_;
    const std::size_t batch = device_ == Device::kCpu ? 1 : kScanBatch;  // the cpu gains nothing
    if (held_.size() >= batch || held_bytes_ >= kScanHeldBytes) issue();
    return count_ - 1;
}

void NonFiniteScan::issue() {
    if (held_.empty()) return;
    std::vector<kernels::ScanBuffer> b;
    for (const Tensor& t : held_) b.push_back({t.f32(), t.numel()});
    const std::size_t first = count_ - held_.size();  // their words follow one another
    device_kernels(device_).first_non_finite_each(
        b.data(), static_cast<int64_t>(b.size()),
        reinterpret_cast<uint64_t*>(words_.data<int64_t>()) + first);
    held_.clear();
    held_bytes_ = 0;
}

std::vector<NonFiniteAt> NonFiniteScan::results() {
    std::vector<NonFiniteAt> out(count_);
    if (count_ == 0) return out;
    issue();
    std::vector<int64_t> words(count_);
    device_memory(device_).to_host(words.data(), words_.data<int64_t>(), count_ * sizeof(int64_t));
    for (std::size_t k = 0; k < count_; ++k) {
        const auto w = static_cast<uint64_t>(words[k]);
        out[k].index = kernels::non_finite_index(w);
        if (out[k].found()) out[k].value = std::bit_cast<float>(kernels::non_finite_value_bits(w));
    }
    return out;
}

int64_t first_non_finite(const Tensor& t) {
    NonFiniteScan scan(t.device());
    scan.add(t);
    return scan.results().front().index;
}

std::vector<int64_t> first_non_finite_each(std::span<const Tensor> ts) {
    std::vector<int64_t> first;
    if (ts.empty()) return first;
    NonFiniteScan scan(ts.front().device());
    for (const Tensor& t : ts) scan.add(t);
    for (const NonFiniteAt& r : scan.results()) first.push_back(r.index);
    return first;
}

}  // namespace dt
