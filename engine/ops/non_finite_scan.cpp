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
    const kernels::ScanBuffer b{t.f32(), t.numel()};
    device_kernels(device_).first_non_finite_each(
        &b, 1, reinterpret_cast<uint64_t*>(words_.data<int64_t>()) + n);
    return count_++;
}

std::vector<NonFiniteAt> NonFiniteScan::results() const {
    std::vector<NonFiniteAt> out(count_);
    if (count_ == 0) return out;
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
