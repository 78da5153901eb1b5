// SPDX-License-Identifier: MIT
// DeviceCall on the cpu (host vectors, the cpu kernel table) and on the cuda device (device
// allocations, the cuda kernel table; results read back after the stream drains), and the list
// of entries in the kernel table's order.
#include "tests/kernels/modes/modes_devices.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#if DT_MODES_ON_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace dt::test {

const std::vector<ModesEntry>& modes_entries() {
    static const std::vector<ModesEntry> entries = {
        bias_add_backward_entry(),      linear_backward_data_entry(),
        linear_backward_weight_entry(), conv2d_backward_data_entry(),
        conv2d_backward_weight_entry(), batchnorm2d_stats_entry(),
        batchnorm2d_backward_entry(),   embedding_backward_entry(),
        layer_norm_forward_entry(),     layer_norm_backward_entry(),
        attention_forward_entry(),      attention_backward_entry(),
        maxpool2d_backward_entry(),     avgpool2d_backward_entry(),
        softmax_xent_forward_entry(),   grad_norm_sq_each_entry()};
    return entries;
}

Settled settled_all(const Floats& outputs_like, bool settled) {
    Settled s;
    for (const std::vector<float>& v : outputs_like) s.emplace_back(v.size(), settled ? 1 : 0);
    return s;
}

namespace {

template <class T>
std::vector<T> converted(const std::vector<float>& v) {
    return std::vector<T>(v.begin(), v.end());
}

#if !DT_MODES_ON_CUDA
class CpuCall final : public DeviceCall {
 public:
    const kernels::KernelTable& table() const override { return kernels::cpu::kernel_table(); }
    const float* in(const std::vector<float>& v) override { return floats_.emplace_back(v).data(); }
    const int32_t* in_i32(const std::vector<float>& v) override {
        return i32_.emplace_back(converted<int32_t>(v)).data();
    }
    const int64_t* in_i64(const std::vector<float>& v) override {
        return i64_.emplace_back(converted<int64_t>(v)).data();
    }
    float* out(int64_t n) override {
        outs_.push_back(floats_.size());
        return floats_.emplace_back(static_cast<std::size_t>(n), 9.0f).data();
    }
    Floats results() override {
        Floats r;
        for (std::size_t k : outs_) r.push_back(floats_[k]);
        return r;
    }

 private:
    std::deque<std::vector<float>> floats_;  // a deque: pointers stay valid as it grows
    std::deque<std::vector<int32_t>> i32_;
    std::deque<std::vector<int64_t>> i64_;
    std::vector<std::size_t> outs_;
};
#else
class CudaCall final : public DeviceCall {
 public:
    ~CudaCall() override {
        for (void* p : blocks_) kernels::cuda::device_free(p);
    }
    const kernels::KernelTable& table() const override { return kernels::cuda::kernel_table(); }
    const float* in(const std::vector<float>& v) override { return copy_in(v); }
    const int32_t* in_i32(const std::vector<float>& v) override {
        return copy_in(converted<int32_t>(v));
    }
    const int64_t* in_i64(const std::vector<float>& v) override {
        return copy_in(converted<int64_t>(v));
    }
    float* out(int64_t n) override {
        float* p = copy_in(std::vector<float>(static_cast<std::size_t>(n), 9.0f));
        outs_.emplace_back(p, n);
        return p;
    }
    Floats results() override {
        Floats r;
        for (const auto& [p, n] : outs_) {
            std::vector<float>& v = r.emplace_back(static_cast<std::size_t>(n));
            kernels::cuda::copy_to_host(v.data(), p, v.size() * sizeof(float));
        }
        kernels::cuda::synchronize();
        const std::string error = kernels::cuda::take_error();
        if (!error.empty()) ADD_FAILURE() << "the cuda kernel failed: " << error;
        return r;
    }

 private:
    template <class T>
    T* copy_in(const std::vector<T>& v) {
        void* p = kernels::cuda::device_malloc(v.size() * sizeof(T) + sizeof(T));
        blocks_.push_back(p);
        kernels::cuda::copy_from_host(p, v.data(), v.size() * sizeof(T));
        return static_cast<T*>(p);
    }
    std::vector<void*> blocks_;
    std::vector<std::pair<float*, int64_t>> outs_;
};
#endif

}  // namespace

std::unique_ptr<DeviceCall> modes_device_call() {
#if DT_MODES_ON_CUDA
    return std::make_unique<CudaCall>();
#else
    return std::make_unique<CpuCall>();
#endif
}

bool modes_device_ready(std::string* why) {
#if DT_MODES_ON_CUDA
    kernels::cuda::DeviceInfo info;
    return kernels::cuda::probe_device(0, &info, why);
#else
    (void)why;
    return true;
#endif
}

}  // namespace dt::test
